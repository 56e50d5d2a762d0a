package org.ddp4j.nn;

import java.util.List;

/**
 * The names a non-strict {@link Module#loadStateDict(java.util.Map, boolean)} could not match.
 * Mirrors PyTorch's {@code _IncompatibleKeys(missing_keys, unexpected_keys)}.
 *
 * @param missingKeys names of the module's parameters and buffers the state dict lacked (left unchanged)
 * @param unexpectedKeys names in the state dict the module has no parameter or buffer for (ignored)
 */
public record IncompatibleKeys(List<String> missingKeys, List<String> unexpectedKeys) {
    /** Whether every name matched. */
    public boolean isEmpty() {
        return missingKeys.isEmpty() && unexpectedKeys.isEmpty();
    }
}
