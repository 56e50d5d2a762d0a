package org.ddp4j.distributed;

/** A store wait, rendezvous or collective did not finish within its timeout; the message names what was missing. */
public class DistributedTimeoutException extends DistributedException {
    public DistributedTimeoutException(String message) {
        super(message);
    }
}
