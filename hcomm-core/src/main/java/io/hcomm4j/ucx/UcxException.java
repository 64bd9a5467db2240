package io.hcomm4j.ucx;

import io.hcomm4j.HcommException;

/** UCX is missing or too old, or one of its calls failed: the message names the call, UCX's status text and the fix. */
public final class UcxException extends HcommException {
    private static final long serialVersionUID = 1L;

    UcxException(String message) {
        super(message);
    }

    UcxException(String message, Throwable cause) {
        super(message, cause);
    }
}
