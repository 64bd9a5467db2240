package io.hcomm4j;

/**
 * What a completed receive got: the sending rank, the message tag and its length in bytes.
 *
 * @param source rank that sent the message (never {@link Communicator#ANY_SOURCE})
 * @param tag    tag the message was sent with (never {@link Communicator#ANY_TAG})
 * @param bytes  number of bytes received
 */
public record Status(int source, int tag, long bytes) {
}
