package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which environments count as "inside a job": init's rule (JobEnvironment), plus srun's one-task steps. */
class JobEnvTest {
    @Test
    void eachLauncher() {
        assertThat(JobEnv.detect(Map.of("RANK", "1", "WORLD_SIZE", "4"))).contains(new JobEnv(1, 4));
        assertThat(JobEnv.detect(Map.of("HCOMM_RANK", "1", "HCOMM_WORLD_SIZE", "2"))).contains(new JobEnv(1, 2));
        assertThat(JobEnv.detect(Map.of("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3"))).contains(new JobEnv(2, 3));
        assertThat(JobEnv.detect(Map.of("PMI_RANK", "2", "PMI_SIZE", "3"))).contains(new JobEnv(2, 3));
        assertThat(JobEnv.detect(Map.of("JOB_COMPLETION_INDEX", "2", "WORLD_SIZE", "3"))).contains(new JobEnv(2, 3));
        assertThat(JobEnv.detect(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_ID", "0"))).contains(new JobEnv(0, 2));
    }

    @Test
    void theSameRuleAsInit() {
        // mpirun from a batch script: the batch step's SLURM_PROCID is not this rank's
        assertThat(JobEnv.detect(Map.of("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3", "SLURM_PROCID", "0",
                "SLURM_NTASKS", "3"))).contains(new JobEnv(2, 3));
        assertThatThrownBy(() -> JobEnv.detect(Map.of("HCOMM_RANK", "0", "RANK", "1", "WORLD_SIZE", "2")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_RANK=0").hasMessageContaining("RANK=1");
        assertThatThrownBy(() -> JobEnv.detect(Map.of("RANK", "2", "WORLD_SIZE", "2"))).hasMessageContaining("rank 2 (from RANK)");
        assertThatThrownBy(() -> JobEnv.detect(Map.of("RANK", "x", "WORLD_SIZE", "2"))).hasMessageContaining("RANK='x'");
    }

    @Test
    void aOneTaskSrunStepOrABatchScriptIsNotAJob() {
        assertThat(JobEnv.detect(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "1", "SLURM_STEP_ID", "0"))).isEmpty();
        assertThat(JobEnv.detect(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "4"))).isEmpty();
    }

    @Test
    void nothingIsNotAJob() {
        assertThat(JobEnv.detect(Map.of())).isEmpty();
        assertThat(JobEnv.detect(Map.of("RANK", "0"))).as("half a pair: init names the missing one").isEmpty();
    }
}
