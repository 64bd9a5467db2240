package io.hcomm4j.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CommConfig;
import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.JobEnvironment.Placement;
import io.hcomm4j.bootstrap.JobEnvironment.Source;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The rule by which every launcher's variables give a rank, a world size and the store's address. The launchers' real
 * environments, fed to {@code Hcomm.init()} in rank JVMs, are {@code io.hcomm4j.LauncherEnvironmentTest}'s.
 */
class JobEnvironmentTest {
    private static Placement place(Map<String, String> env) {
        return place(CommConfig.builder(), env, Map.of());
    }

    private static Placement place(CommConfig.Builder config, Map<String, String> env, Map<String, String> props) {
        return JobEnvironment.resolve(config.build(), env, props::get);
    }

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    @Test
    void eachLauncherAlone() {
        assertThat(place(env("RANK", "2", "WORLD_SIZE", "4"))).extracting(Placement::rank, Placement::worldSize, Placement::source)
                .containsExactly(2, 4, Source.TORCHRUN);
        assertThat(place(env("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3")).source()).isEqualTo(Source.OPEN_MPI);
        assertThat(place(env("PMI_RANK", "0", "PMI_SIZE", "1")).source()).isEqualTo(Source.PMI);
        Placement k8s = place(env("JOB_COMPLETION_INDEX", "6", "WORLD_SIZE", "8"));
        assertThat(k8s).extracting(Placement::rank, Placement::worldSize, Placement::source).containsExactly(6, 8, Source.KUBERNETES);
        assertThat(k8s.choice()).isEqualTo("rank 6 of 8 from JOB_COMPLETION_INDEX=6, WORLD_SIZE=8 (Kubernetes Indexed Job)");
        assertThat(place(env("SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_STEP_ID", "0")))
                .extracting(Placement::rank, Placement::worldSize, Placement::source).containsExactly(5, 8, Source.SLURM);
        assertThat(place(env("HCOMM_RANK", "1", "HCOMM_WORLD_SIZE", "2")).source()).isEqualTo(Source.HCOMM);
        assertThat(place(env("RANK", "1", "WORLD_SIZE", "2")).ignored()).isEmpty();
    }

    @Test
    void innerLaunchersOverrideTheAllocationAroundThemAndSaySo() {
        // mpirun from a batch script: every rank inherits the batch step's SLURM_PROCID=0 (no SLURM_STEP_ID there)
        Placement mpirun = place(env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4",
                "SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "77"));
        assertThat(mpirun).extracting(Placement::rank, Placement::worldSize, Placement::source).containsExactly(3, 4, Source.OPEN_MPI);
        assertThat(mpirun.ignored()).singleElement().asString().contains("SLURM_PROCID=0").contains("no SLURM_STEP_ID");
        // mpirun whose daemons srun started: the ranks see the daemons' step, one task per node
        assertThat(place(env("PMI_RANK", "3", "PMI_SIZE", "4", "SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_ID", "0")))
                .extracting(Placement::rank, Placement::source).containsExactly(3, Source.PMI);
        // torchrun under srun (one agent per node) and in an Indexed Job's pod (the index is torchrun's node rank)
        Placement underSrun = place(env("RANK", "3", "WORLD_SIZE", "8", "SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_ID", "4"));
        assertThat(underSrun).extracting(Placement::rank, Placement::worldSize).containsExactly(3, 8);
        assertThat(underSrun.ignored()).containsExactly("SLURM_PROCID=1, SLURM_NTASKS=2 (Slurm srun)");
        assertThat(place(env("RANK", "5", "WORLD_SIZE", "8", "JOB_COMPLETION_INDEX", "1")).rank()).isEqualTo(5);
        // a manifest that maps the index to RANK: the two agree, nothing is overridden
        assertThat(place(env("RANK", "6", "JOB_COMPLETION_INDEX", "6", "WORLD_SIZE", "8")).ignored()).isEmpty();
        // HCOMM_RANK overrides an allocation too
        assertThat(place(env("HCOMM_RANK", "3", "HCOMM_WORLD_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_ID", "0")))
                .extracting(Placement::rank, Placement::worldSize, Placement::source).containsExactly(3, 4, Source.HCOMM);
    }

    @Test
    void sourcesThatDescribeTheSameProcessMustAgree() {
        assertThatThrownBy(() -> place(env("HCOMM_RANK", "1", "RANK", "0", "WORLD_SIZE", "2")))
                .isInstanceOf(HcommException.class).hasMessageContaining("contradicting")
                .hasMessageContaining("HCOMM_RANK=1 (set by you)").hasMessageContaining("RANK=0, WORLD_SIZE=2 (torchrun / hcomm launch)");
        assertThatThrownBy(() -> place(env("HCOMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2")))
                .hasMessageContaining("HCOMM_WORLD_SIZE=4").hasMessageContaining("OMPI_COMM_WORLD_SIZE=2");
        // a stale RANK exported in the shell that runs mpirun reaches the ranks mpirun starts on that host
        assertThatThrownBy(() -> place(env("RANK", "0", "WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4")))
                .hasMessageContaining("RANK=0, WORLD_SIZE=4 (torchrun / hcomm launch)")
                .hasMessageContaining("OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=4 (Open MPI mpirun)");
        assertThatThrownBy(() -> place(env("JOB_COMPLETION_INDEX", "1", "WORLD_SIZE", "4", "SLURM_PROCID", "2", "SLURM_NTASKS", "4",
                "SLURM_STEP_ID", "0"))).hasMessageContaining("JOB_COMPLETION_INDEX=1").hasMessageContaining("SLURM_PROCID=2");
        // agreeing sources are fine
        assertThat(place(env("HCOMM_RANK", "1", "HCOMM_WORLD_SIZE", "2", "RANK", "1", "WORLD_SIZE", "2")).source()).isEqualTo(Source.HCOMM);
        assertThat(place(env("RANK", "1", "WORLD_SIZE", "2", "PMI_RANK", "1", "PMI_SIZE", "2")).ignored()).isEmpty();
    }

    @Test
    void codeWinsOverEveryVariableWhileHcommRankFromTheEnvironmentIsChecked() {
        Map<String, String> torchrun = env("RANK", "3", "WORLD_SIZE", "4");
        Placement code = place(CommConfig.builder().rank(1).worldSize(2), torchrun, Map.of());
        assertThat(code).extracting(Placement::rank, Placement::worldSize, Placement::source).containsExactly(1, 2, Source.CONFIG);
        assertThat(code.ignored()).containsExactly("RANK=3, WORLD_SIZE=4 (torchrun / hcomm launch)");
        Placement sizeFromEnv = place(CommConfig.builder().rank(1), torchrun, Map.of());
        assertThat(sizeFromEnv).extracting(Placement::rank, Placement::worldSize).containsExactly(1, 4);
        assertThat(sizeFromEnv.choice()).isEqualTo("rank 1 (from CommConfig, set in code) of 4 (from WORLD_SIZE)");
        // CommConfig.fromEnvironment() put HCOMM_RANK=1 into the config: still a contradiction with RANK=3
        Map<String, String> stale = env("HCOMM_RANK", "1", "RANK", "3", "WORLD_SIZE", "4");
        assertThatThrownBy(() -> place(CommConfig.builder().rank(1), stale, Map.of())).hasMessageContaining("HCOMM_RANK=1");
        assertThatThrownBy(() -> place(CommConfig.builder().rank(1), env("RANK", "3", "WORLD_SIZE", "4"), Map.of("hcomm.rank", "1")))
                .hasMessageContaining("hcomm.rank=1").hasMessageContaining("RANK=3");
    }

    @Test
    void slurmVariablesOutsideAnSrunStepGiveNoRank() {
        // the batch script itself (sbatch --ntasks=4): rank 0 of 4 would wait for three ranks nobody starts
        assertThatThrownBy(() -> place(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "9")))
                .isInstanceOf(HcommException.class).hasMessageContaining("cannot tell this process's rank")
                .hasMessageContaining("SLURM_PROCID=0, SLURM_NTASKS=4 (Slurm's batch script or salloc shell, not an srun step: no SLURM_STEP_ID)");
        assertThat(JobEnvironment.detect(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4"))).isEmpty();
        assertThat(place(env("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEPID", "3")).rank()).as("old name").isEqualTo(1);
    }

    @Test
    void missingAndBadValuesAreNamed() {
        assertThatThrownBy(() -> place(Map.of())).isInstanceOf(HcommException.class)
                .hasMessageContaining("HCOMM_RANK").hasMessageContaining("RANK/WORLD_SIZE")
                .hasMessageContaining("SLURM_PROCID/SLURM_NTASKS (Slurm srun, with SLURM_STEP_ID)")
                .hasMessageContaining("OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE").hasMessageContaining("PMI_RANK/PMI_SIZE")
                .hasMessageContaining("JOB_COMPLETION_INDEX/WORLD_SIZE").hasMessageEndingWith("found none");
        assertThatThrownBy(() -> place(Map.of("RANK", "1"))).hasMessageContaining("RANK is set but WORLD_SIZE is not");
        assertThatThrownBy(() -> place(Map.of("JOB_COMPLETION_INDEX", "1"))).hasMessageContaining("JOB_COMPLETION_INDEX is set but WORLD_SIZE is not");
        assertThatThrownBy(() -> place(Map.of("RANK", "one", "WORLD_SIZE", "4"))).hasMessageContaining("RANK='one' is not an integer");
        assertThatThrownBy(() -> place(env("SLURM_PROCID", "4", "SLURM_NTASKS", "4", "SLURM_STEP_ID", "0")))
                .hasMessageContaining("rank 4 (from SLURM_PROCID)").hasMessageContaining("SLURM_NTASKS");
        assertThatThrownBy(() -> place(Map.of("RANK", "-1", "WORLD_SIZE", "4"))).hasMessageContaining("rank -1");
        assertThatThrownBy(() -> place(Map.of("RANK", "0", "WORLD_SIZE", "0"))).hasMessageContaining("world size 0");
        assertThat(JobEnvironment.detect(Map.of())).isEmpty();
    }

    @Test
    void storeAddressFromMasterVariablesOrTheSrunStep() {
        CommConfig plain = CommConfig.builder().build();
        JobEnvironment.StoreAddress torchrun = JobEnvironment.storeAddress(plain,
                env("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500"), Source.TORCHRUN);
        assertThat(torchrun.address().getPort()).isEqualTo(29500);
        assertThat(torchrun.origin()).isEqualTo("MASTER_ADDR:MASTER_PORT");
        assertThat(JobEnvironment.storeAddress(CommConfig.builder().storePort(29600).build(),
                env("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500"), Source.TORCHRUN).address().getPort()).isEqualTo(29600);

        Map<String, String> srun = env("SLURM_PROCID", "1", "SLURM_NTASKS", "6", "SLURM_STEP_ID", "0", "SLURM_JOB_ID", "123456",
                "SLURM_JOB_NODELIST", "node[01-04,07],gpu5", "SLURM_STEP_NODELIST", "node[03-04,07],gpu5");
        JobEnvironment.StoreAddress step = JobEnvironment.storeAddress(plain, srun, Source.SLURM);
        assertThat(step.address().getHostString()).isEqualTo("node03");
        assertThat(step.address().getPort()).isEqualTo(20000 + 123456 % 20000);
        assertThat(step.origin()).isEqualTo("the first node of SLURM_STEP_NODELIST and 20000 + SLURM_JOB_ID % 20000");
        srun.remove("SLURM_STEP_NODELIST");
        assertThat(JobEnvironment.storeAddress(plain, srun, Source.SLURM).address().getHostString()).isEqualTo("node01");
        srun.put("MASTER_ADDR", "127.0.0.1");
        srun.put("MASTER_PORT", "29500");
        assertThat(JobEnvironment.storeAddress(plain, srun, Source.SLURM).origin()).isEqualTo("MASTER_ADDR:MASTER_PORT");
        // the step's nodes say nothing about where another launcher's rank 0 runs
        srun.remove("MASTER_ADDR");
        assertThatThrownBy(() -> JobEnvironment.storeAddress(plain, srun, Source.OPEN_MPI)).hasMessageContaining("MASTER_ADDR is not set");
        assertThatThrownBy(() -> JobEnvironment.storeAddress(plain, env("SLURM_JOB_NODELIST", "node[1-"), Source.SLURM))
                .hasMessageContaining("SLURM_JOB_NODELIST='node[1-' is not a Slurm host list");
    }

    @Test
    void torchrunsAgentStoreOnMasterPortNeedsHcommStorePort() {
        Map<String, String> agent = env("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500",
                "TORCHELASTIC_USE_AGENT_STORE", "True");
        assertThatThrownBy(() -> JobEnvironment.storeAddress(CommConfig.builder().build(), agent, Source.TORCHRUN))
                .isInstanceOf(HcommException.class).hasMessageContaining("torchrun's agent serves its own store")
                .hasMessageContaining("127.0.0.1:29500").hasMessageContaining("TORCHELASTIC_USE_AGENT_STORE=True")
                .hasMessageContaining("HCOMM_STORE_PORT");
        assertThat(JobEnvironment.storeAddress(CommConfig.builder().storePort(29501).build(), agent, Source.TORCHRUN).origin())
                .isEqualTo("MASTER_ADDR and HCOMM_STORE_PORT");
        agent.put("TORCHELASTIC_USE_AGENT_STORE", "False");   // the workers' store is theirs to serve: rank 0 takes MASTER_PORT
        assertThat(JobEnvironment.storeAddress(CommConfig.builder().build(), agent, Source.TORCHRUN).address().getPort()).isEqualTo(29500);
    }
}
