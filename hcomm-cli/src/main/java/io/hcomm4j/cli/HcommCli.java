package io.hcomm4j.cli;

/** Entry point of the {@code hcomm} command. */
public final class HcommCli {
    private HcommCli() {
    }

    /** Runs the command line. */
    public static void main(String[] args) {
        System.out.println("hcomm: TODO");
    }
}
