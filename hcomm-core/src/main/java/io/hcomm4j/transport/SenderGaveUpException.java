package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;

/**
 * A receive whose matched sender withdrew its message before the data went (its op failed or was aborted there). Inside
 * a collective this is most often a peer that saw a member fail before this rank did; the collective layer then reports
 * that failure, once it shows here.
 */
public final class SenderGaveUpException extends CommAbortedException {
    private static final long serialVersionUID = 1L;

    SenderGaveUpException(String message) {
        super(message);
    }
}
