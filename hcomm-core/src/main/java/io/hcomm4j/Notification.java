package io.hcomm4j;

/**
 * A notification one engine sent another ({@link TransferEngine#notify(RemoteEngine, String, byte[])}), as
 * {@link TransferEngine#drainNotifies()} returns it: delivered once, and in the order its sender sent it relative to
 * the sender's other notifications.
 *
 * @param from  the sending engine's name
 * @param fromId the sending engine's id (its slot: {@link RemoteEngine#id()})
 * @param name  what the sender named it
 * @param bytes its payload (the array belongs to the receiver)
 */
public record Notification(String from, int fromId, String name, byte[] bytes) {
    /** Checks that nothing is null. */
    public Notification {
        java.util.Objects.requireNonNull(from, "from");
        java.util.Objects.requireNonNull(name, "name");
        java.util.Objects.requireNonNull(bytes, "bytes");
    }

    @Override
    public String toString() {
        return "Notification[from=" + from + " (" + fromId + "), name=" + name + ", " + bytes.length + " bytes]";
    }
}
