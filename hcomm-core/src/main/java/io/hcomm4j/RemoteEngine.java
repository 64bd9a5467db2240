package io.hcomm4j;

/**
 * Another transfer engine this one is connected to ({@link TransferEngine#connect}): the handle transfers and
 * notifications name. An engine's id is its slot in the job, handed out by the store when it started and never given
 * to another engine, so a handle keeps naming the engine it was made for: if that engine leaves and a new one starts
 * under the same name, transfers through the old handle fail, and a new {@code connect} by name reaches the new one.
 *
 * @param name the remote engine's name
 * @param id   the remote engine's slot in the job
 */
public record RemoteEngine(String name, int id) {
    /** Checks the arguments. */
    public RemoteEngine {
        java.util.Objects.requireNonNull(name, "name");
        if (id < 0) throw new IllegalArgumentException("id must be >= 0, was " + id);
    }
}
