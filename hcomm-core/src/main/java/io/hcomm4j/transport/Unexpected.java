package io.hcomm4j.transport;

/** A message that arrived before its receive: eager bytes, an RTS, or a send to self. */
record Unexpected(long commId, int src, int tag, long size, byte[] data, long msgId, SendRequest selfSend, int flags) {
}
