package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.LauncherWorker;
import io.hcomm4j.testing.Ranks;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Every launcher of docs/deploy.md, as the ranks see it: each rank is a JVM whose environment is exactly what that
 * launcher gives its processes (nothing inherited from the test), and {@code Hcomm.init()} must find its rank from it,
 * meet the others, all-reduce and all-gather. To start few JVMs, one job of 5 ranks holds every launcher: rank 0 is
 * torchrun's worker (torchrun started by srun, one agent per node), 1 a task of an srun step, 2 a rank of Open MPI's
 * mpirun run from a Slurm batch script, 3 of MPICH's Hydra, 4 a Kubernetes Indexed Job's pod. torchrun's agent store
 * holds MASTER_PORT (a listener of the test's that speaks something else), so the torchrun rank serves the store at
 * HCOMM_STORE_PORT; the srun task finds it with no MASTER_* at all, from its step's node list and job id. Two more
 * processes must fail at init, fast: torchrun's agent store without HCOMM_STORE_PORT, and a stale HCOMM_RANK that
 * contradicts torchrun's RANK. The rule itself, case by case: {@code io.hcomm4j.bootstrap.JobEnvironmentTest}.
 */
@Timeout(120)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LauncherEnvironmentTest {
    private static final int N = 5;
    private static final String SECRET = "launcher-env-secret";
    private static final Pattern FAILED = Pattern.compile("INIT FAILED after (\\d+) ms: (.*)");
    /** The one line JobEnvironment logs at init (slf4j-simple: level, logger, message). */
    private static final Pattern CHOICE = Pattern.compile("(DEBUG|INFO) io\\.hcomm4j\\.bootstrap\\.JobEnvironment - (.*)");

    private final Map<String, String> outputs = new LinkedHashMap<>();
    private final Map<String, Integer> exits = new LinkedHashMap<>();
    private ServerSocket torchStore;
    private final AtomicInteger torchStoreConnections = new AtomicInteger();

    @BeforeAll
    void runTheJob() throws Exception {
        torchStore = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(this::speakSomethingElse);
        String agentPort = Integer.toString(torchStore.getLocalPort());
        int store = freePortIn20000To40000();
        String slurmJob = Integer.toString(62 * 20000 + store - 20000);   // its store port: 20000 + SLURM_JOB_ID % 20000

        Map<String, Map<String, String>> processes = new LinkedHashMap<>();
        // torchrun as srun starts it, one agent per node: RANK is the rank, SLURM_PROCID the node's task number
        Map<String, String> torchrun = with(torchrun(0, N, agentPort), "HCOMM_STORE_PORT", Integer.toString(store));
        torchrun.putAll(Map.of("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_ID", "0", "SLURM_JOB_ID", slurmJob,
                "SLURM_STEP_NODELIST", "node[01-02]", "SLURM_JOB_NODELIST", "node[01-02]", "SLURM_NODEID", "1", "SLURM_LOCALID", "0"));
        processes.put("torchrun in srun", torchrun);
        processes.put("srun", srunTask(1, N, slurmJob));
        processes.put("mpirun in sbatch", openMpiInBatchScript(2, N, store));
        processes.put("hydra", hydra(3, N, store));
        processes.put("indexed job", indexedJob(4, N, store));
        processes.put("agent store, no HCOMM_STORE_PORT", torchrun(1, 2, agentPort));
        processes.put("stale HCOMM_RANK", with(torchrun(0, 2, agentPort), "HCOMM_RANK", "1", "HCOMM_STORE_PORT", "1"));

        Path dir = Files.createTempDirectory("hcomm-launchers");
        long t0 = System.nanoTime();
        // The two that must fail first, on their own: their time to fail is measured, and 5 starting JVMs on 2 cores
        // would stretch it. The job's ranks then start together.
        List<String> names = new ArrayList<>(processes.keySet());
        runTogether(names.subList(N, names.size()), processes, dir);
        runTogether(names.subList(0, N), processes, dir);
        System.out.printf("LauncherEnvironmentTest: 2 failing JVMs, then %d ranks' JVMs, in %d ms%n", N,
                (System.nanoTime() - t0) / 1_000_000);
    }

    private void runTogether(List<String> names, Map<String, Map<String, String>> processes, Path dir) throws Exception {
        List<Process> started = new ArrayList<>();
        try {
            for (String name : names) {
                List<String> cmd = Ranks.javaCommand(LauncherWorker.class);
                cmd.add(1, "-Dorg.slf4j.simpleLogger.log.io.hcomm4j.bootstrap.JobEnvironment=debug");
                cmd.add(1, "-XX:TieredStopAtLevel=1");   // C1 only: 40% less CPU for JVMs this short-lived
                ProcessBuilder pb = new ProcessBuilder(cmd);
                pb.environment().clear();
                pb.environment().putAll(processes.get(name));
                pb.environment().put("HCOMM_SECRET", SECRET);   // every recipe passes the job's secret on
                Path log = dir.resolve(name.replaceAll("\\W+", "-") + ".log");
                pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
                started.add(pb.start());
            }
            for (int i = 0; i < names.size(); i++) {
                Process p = started.get(i);
                boolean done = p.waitFor(90, TimeUnit.SECONDS);
                outputs.put(names.get(i), Files.readString(dir.resolve(names.get(i).replaceAll("\\W+", "-") + ".log")));
                exits.put(names.get(i), done ? p.exitValue() : -1);
            }
        } finally {
            for (Process p : started) p.destroyForcibly();
        }
    }

    @AfterAll
    void closeTheForeignStore() throws IOException {
        torchStore.close();
    }

    @Test
    void torchrunInAnSrunStepUnderItsAgentStoreServesTheStoreOnHcommStorePort() {
        assertRank("torchrun in srun", 0, "rank 0 of 5 from RANK=0, WORLD_SIZE=5 (torchrun / hcomm launch); "
                + "ignored SLURM_PROCID=1, SLURM_NTASKS=2 (Slurm srun)", true);
        assertThat(torchStoreConnections).as("nobody mistook torchrun's store for ours").hasValue(0);
    }

    @Test
    void srunTaskFindsTheStoreOnItsStepsFirstNodeWithoutMasterVariables() {
        assertRank("srun", 1, "rank 1 of 5 from SLURM_PROCID=1, SLURM_NTASKS=5 (Slurm srun)", false);
    }

    @Test
    void mpirunFromASlurmBatchScriptOverridesTheInheritedSlurmProcid() {
        assertRank("mpirun in sbatch", 2, "rank 2 of 5 from OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=5 (Open MPI mpirun); "
                + "ignored SLURM_PROCID=0, SLURM_NTASKS=5 (Slurm's batch script or salloc shell, not an srun step: no SLURM_STEP_ID)", true);
    }

    @Test
    void mpichHydra() {
        assertRank("hydra", 3, "rank 3 of 5 from PMI_RANK=3, PMI_SIZE=5 (MPICH / Intel MPI (Hydra))", false);
    }

    @Test
    void kubernetesIndexedJobWithoutRank() {
        assertRank("indexed job", 4, "rank 4 of 5 from JOB_COMPLETION_INDEX=4, WORLD_SIZE=5 (Kubernetes Indexed Job)", false);
    }

    @Test
    void torchrunsAgentStoreWithoutHcommStorePortFailsAtOnceNamingTheCause() {
        Matcher m = failure("agent store, no HCOMM_STORE_PORT");
        assertThat(Long.parseLong(m.group(1))).as("init's time to fail, ms").isLessThan(5000);
        assertThat(m.group(2)).contains("torchrun's agent serves its own store")
                .contains("127.0.0.1:" + torchStore.getLocalPort()).contains("TORCHELASTIC_USE_AGENT_STORE=True")
                .contains("set HCOMM_STORE_PORT");
    }

    @Test
    void anExportedHcommRankThatContradictsTorchrunsIsAnErrorNamingBoth() {
        Matcher m = failure("stale HCOMM_RANK");
        assertThat(m.group(2)).contains("contradicting").contains("HCOMM_RANK=1 (set by you)")
                .contains("RANK=0, WORLD_SIZE=2 (torchrun / hcomm launch)");
        // the public reading (Hcomm.launchedAs) refuses it alike
        assertThat(outputs.get("stale HCOMM_RANK")).contains("LAUNCHED AS refused: ").contains("contradicting");
    }

    private void assertRank(String name, int rank, String choice, boolean info) {
        String out = outputs.get(name);
        assertThat(exits.get(name)).as(name + ":\n" + out + "\nall:\n" + outputs).isZero();
        assertThat(out).as(name).contains("LAUNCHED rank " + rank + "/" + N + " OK")
                .contains("LAUNCHED AS rank " + rank + "/" + N + ": " + choice.replaceFirst("; .*", ""));
        List<String> choices = new ArrayList<>();
        Matcher m = CHOICE.matcher(out);
        while (m.find()) choices.add(m.group(1) + " " + m.group(2));
        assertThat(choices).as("the choice, logged once: INFO when it overrode something, DEBUG otherwise")
                .containsExactly((info ? "INFO " : "DEBUG ") + choice);
    }

    private Matcher failure(String name) {
        String out = outputs.get(name);
        assertThat(exits.get(name)).as(out).isEqualTo(3);
        Matcher m = FAILED.matcher(out);
        assertThat(m.find()).as(out).isTrue();
        return m;
    }

    /** torchrun's worker environment (torch/distributed/elastic/agent/server/local_elastic_agent.py). */
    private static Map<String, String> torchrun(int rank, int size, String masterPort) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("LOCAL_RANK", "0");
        env.put("RANK", Integer.toString(rank));
        env.put("GROUP_RANK", Integer.toString(rank));
        env.put("ROLE_RANK", Integer.toString(rank));
        env.put("ROLE_NAME", "default");
        env.put("LOCAL_WORLD_SIZE", "1");
        env.put("WORLD_SIZE", Integer.toString(size));
        env.put("GROUP_WORLD_SIZE", Integer.toString(size));
        env.put("ROLE_WORLD_SIZE", Integer.toString(size));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", masterPort);
        env.put("TORCHELASTIC_RESTART_COUNT", "0");
        env.put("TORCHELASTIC_MAX_RESTARTS", "0");
        env.put("TORCHELASTIC_RUN_ID", "none");
        env.put("TORCHELASTIC_USE_AGENT_STORE", "True");
        env.put("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
        env.put("OMP_NUM_THREADS", "1");
        return env;
    }

    /** A task of `srun -n 5` on a one-node allocation (the node is called localhost), run from the recipe's script. */
    private static Map<String, String> srunTask(int rank, int size, String job) {
        Map<String, String> env = new LinkedHashMap<>();
        env.putAll(Map.of("SLURM_PROCID", Integer.toString(rank), "SLURM_NTASKS", Integer.toString(size),
                "SLURM_NPROCS", Integer.toString(size), "SLURM_STEP_ID", "0", "SLURM_STEPID", "0", "SLURM_JOB_ID", job,
                "SLURM_JOBID", job, "SLURM_JOB_NODELIST", "localhost", "SLURM_NODELIST", "localhost",
                "SLURM_STEP_NODELIST", "localhost"));
        env.putAll(Map.of("SLURM_NNODES", "1", "SLURM_STEP_NUM_NODES", "1", "SLURM_STEP_NUM_TASKS", Integer.toString(size),
                "SLURM_TASKS_PER_NODE", Integer.toString(size), "SLURM_NODEID", "0", "SLURM_LOCALID", Integer.toString(rank),
                "SLURMD_NODENAME", "localhost", "SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1", "SLURM_CPUS_ON_NODE", "2"));
        return env;
    }

    /**
     * A rank of `mpirun -x MASTER_ADDR -x MASTER_PORT` run from an sbatch script: Open MPI's variables and the batch
     * step's Slurm variables, SLURM_PROCID=0 among them, which every rank inherits.
     */
    private static Map<String, String> openMpiInBatchScript(int rank, int size, int store) {
        Map<String, String> env = new LinkedHashMap<>();
        String r = Integer.toString(rank);
        String n = Integer.toString(size);
        env.putAll(Map.of("OMPI_COMM_WORLD_RANK", r, "OMPI_COMM_WORLD_SIZE", n, "OMPI_COMM_WORLD_LOCAL_RANK", "0",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "1", "OMPI_COMM_WORLD_NODE_RANK", "0", "OMPI_UNIVERSE_SIZE", n,
                "PMIX_RANK", r, "PMIX_NAMESPACE", "prterun-node01-4242@1", "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", Integer.toString(store)));
        env.putAll(Map.of("SLURM_JOB_ID", "4242", "SLURM_JOBID", "4242", "SLURM_JOB_NODELIST", "node[01-04,07],gpu5",
                "SLURM_NODELIST", "node[01-04,07],gpu5", "SLURM_NNODES", n, "SLURM_NTASKS", n, "SLURM_NPROCS", n,
                "SLURM_PROCID", "0", "SLURM_LOCALID", "0", "SLURM_NODEID", "0"));
        env.put("SLURM_TASKS_PER_NODE", "1(x" + n + ")");
        return env;
    }

    /** A rank of MPICH's `mpiexec -genv MASTER_ADDR ... -genv MASTER_PORT ...` (Hydra's PMI-1 variables). */
    private static Map<String, String> hydra(int rank, int size, int store) {
        return new LinkedHashMap<>(Map.of("PMI_RANK", Integer.toString(rank), "PMI_SIZE", Integer.toString(size), "PMI_FD", "6",
                "MPI_LOCALRANKID", "0", "MPI_LOCALNRANKS", "1", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(store)));
    }

    /** A pod of an Indexed Job whose manifest sets WORLD_SIZE and MASTER_* but not RANK: the index is the rank. */
    private static Map<String, String> indexedJob(int rank, int size, int store) {
        Map<String, String> env = new LinkedHashMap<>(Map.of("JOB_COMPLETION_INDEX", Integer.toString(rank),
                "HOSTNAME", "hcomm-training-" + rank, "WORLD_SIZE", Integer.toString(size), "POD_NAMESPACE", "default",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(store),
                "KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443"));
        return env;
    }

    private static Map<String, String> with(Map<String, String> env, String... kv) {
        for (int i = 0; i < kv.length; i += 2) env.put(kv[i], kv[i + 1]);
        return env;
    }

    /** torchrun's own store stands in here: it accepts, reads and answers in a protocol of its own. */
    private void speakSomethingElse() {
        while (!torchStore.isClosed()) {
            try (Socket s = torchStore.accept()) {
                torchStoreConnections.incrementAndGet();
                s.setSoTimeout(2000);
                InputStream in = s.getInputStream();
                if (in.read(new byte[64]) > 0) s.getOutputStream().write("\u0000torch-store?\n".getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                // closed at the end of the test, or a client went away
            }
        }
    }

    /** A port free on loopback in [20000, 40000), the range of Slurm's default store port. */
    private static int freePortIn20000To40000() {
        Random random = new Random(0x5EED);
        for (int i = 0; i < 200; i++) {
            int p = 20000 + random.nextInt(20000);
            try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getLoopbackAddress())) {
                return p;
            } catch (IOException busy) {
                // try another
            }
        }
        throw new IllegalStateException("no free port in [20000, 40000)");
    }
}
