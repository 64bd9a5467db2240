package io.hcomm4j.cli;

import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.security.Auth;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code hcomm store}: serves a job's store in a process of its own, until it is stopped. For jobs whose store must not
 * go away with any rank or launcher (a Kubernetes Service in front of it, say): the ranks run with
 * {@code HCOMM_STORE_HOSTED=1} and find it at {@code MASTER_ADDR:MASTER_PORT} (or {@code HCOMM_INIT_METHOD=tcp://...}).
 * Started again on the same port after a crash, it is empty, and the ranks write back what they had written
 * (HCOMM_STORE_RECONNECT, docs/reliability.md). Without {@code HCOMM_SECRET} it listens on loopback only, unless
 * {@code HCOMM_AUTH=none} says to serve anyone (docs/reliability.md, "Secret policy").
 */
@Command(name = "store", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Serves a job's store (the rendezvous of Hcomm.init(), shrink and grow) in this process until it is stopped"
                    + " (SIGTERM, Ctrl-C). Ranks find it with HCOMM_STORE_HOSTED=1 and MASTER_ADDR:MASTER_PORT (or"
                    + " HCOMM_INIT_METHOD=tcp://host:port); every connection proves HCOMM_SECRET.",
            "Without HCOMM_SECRET it listens on 127.0.0.1 only, for ranks of this host; HCOMM_AUTH=none serves anyone on"
                    + " any address, unauthenticated (for a network where every host is trusted).",
            "The data lives in this process only. Started again on the same port (after a crash, a rescheduled pod), it"
                    + " is empty: each rank reconnects within HCOMM_STORE_RECONNECT and writes back what it had written,"
                    + " so a job whose store restarts, even in the middle of Hcomm.init(), goes on.",
            "",
        },
        footer = {
            "",
            "Example:",
            "  export HCOMM_SECRET=$(hcomm secret)",
            "  hcomm store --port 29500 &",
            "  HCOMM_STORE_HOSTED=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./hcomm launch -n 4 ... (or any launcher)",
        })
final class StoreCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Option(names = "--bind", paramLabel = "ADDR",
            description = "Address to listen on (default: 0.0.0.0, every interface; without HCOMM_SECRET 127.0.0.1, and"
                    + " another address needs HCOMM_AUTH=none).")
    String bind;

    @Option(names = "--port", paramLabel = "P",
            description = "Port to listen on (default: MASTER_PORT, else 29500).")
    Integer port;

    @Override
    public Integer call() throws InterruptedException {
        int p = port != null ? port : parsePort(parent.env.get("MASTER_PORT"));
        if (p < 1 || p > 65535) throw new IllegalArgumentException("--port " + p + " is not in [1, 65535]");
        String secret = parent.env.get("HCOMM_SECRET");
        if (secret != null && secret.isBlank()) secret = null;
        if (secret != null) Auth.checkSecret(secret, "HCOMM_SECRET");
        String mode = parent.env.getOrDefault("HCOMM_AUTH", "").trim();
        if (!mode.isEmpty() && !mode.equalsIgnoreCase("none") && !mode.equalsIgnoreCase("secret")) {
            throw new IllegalArgumentException("HCOMM_AUTH='" + mode + "' is not one of secret, none");
        }
        Auth auth = Auth.forJob(secret, mode.equalsIgnoreCase("none"));
        String address = bind != null ? bind : auth.hasSecret() || auth.isUnauthenticated() ? "0.0.0.0" : "127.0.0.1";
        if (auth.isUnauthenticated()) {
            parent.err.println("hcomm store: HCOMM_AUTH=none and no HCOMM_SECRET: connections are not authenticated, so any"
                    + " process that can reach the port can read and change the job's store");
        } else if (!auth.hasSecret() && bind == null) {
            parent.err.println("hcomm store: HCOMM_SECRET is not set: listening on " + address + " only, for ranks of this"
                    + " host; for ranks of other hosts set HCOMM_SECRET (" + Auth.HOW_TO_MAKE_ONE + ") here and in the ranks");
        }
        TcpStoreServer server;
        try {
            // HCOMM_TLS=1 with the job's stores: every connection under TLS, as the ranks' own
            io.hcomm4j.TlsConfig tls = io.hcomm4j.TlsConfig.fromVariables(parent.env).orElse(null);
            server = TcpStoreServer.start(new InetSocketAddress(address, p),
                    auth.withTls(tls == null ? null : io.hcomm4j.security.TlsContext.of(tls)));
            if (tls != null) parent.out.println("hcomm store: TLS 1.3 on every connection (" + tls + ")");
        } catch (IllegalArgumentException e) {
            parent.err.println("hcomm store: " + e.getMessage());
            return 2;
        } catch (HcommException e) {
            parent.err.println("hcomm store: " + e.getMessage());
            return 1;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGTERM and Ctrl-C run the hooks: close the server (its connections end, the clients notice) and return
        Thread hook = new Thread(() -> {
            server.close();
            stopped.countDown();
        }, "hcomm-store-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        parent.out.println("hcomm store: serving on " + server.address().getHostString() + ":" + server.address().getPort()
                + " (incarnation " + Long.toHexString(server.incarnation()) + "); ranks: HCOMM_STORE_HOSTED=1 MASTER_ADDR=<this host> MASTER_PORT="
                + server.address().getPort());
        parent.out.flush();
        stopped.await();
        return 0;
    }

    private static int parsePort(String masterPort) {
        if (masterPort == null || masterPort.isBlank()) return 29500;
        try {
            return Integer.parseInt(masterPort.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("MASTER_PORT '" + masterPort + "' is not a port number; give --port");
        }
    }
}
