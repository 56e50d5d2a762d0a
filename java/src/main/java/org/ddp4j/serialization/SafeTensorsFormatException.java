package org.ddp4j.serialization;

import java.io.IOException;

/**
 * A file that is not a valid safetensors file: its message names the file, the tensor where there
 * is one, and what is wrong. {@link SafeTensors} throws it as the cause of an
 * {@link java.io.UncheckedIOException} with the same message.
 */
public class SafeTensorsFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public SafeTensorsFormatException(String message) {
        super(message);
    }

    public SafeTensorsFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
