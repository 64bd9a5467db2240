package io.hcomm4j.cli;

import io.hcomm4j.security.Auth;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

/**
 * {@code hcomm secret}: prints a new random job secret, so that documentation and scripts never need a literal one
 * ({@code export HCOMM_SECRET=$(hcomm secret)}).
 */
@Command(name = "secret", usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Prints a new random job secret: 24 bytes from the JVM's SecureRandom, as 48 hex digits. Every rank of a job"
                    + " needs the same one in HCOMM_SECRET (at least 16 bytes); hcomm launch makes one by itself for the"
                    + " jobs it starts on one node.",
        },
        footer = {
            "",
            "Example:",
            "  export HCOMM_SECRET=$(hcomm secret)    # then pass it to every node or rank of the job",
        })
final class SecretCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Override
    public Integer call() {
        parent.out.println(Auth.newSecret());
        parent.out.flush();
        return 0;
    }
}
