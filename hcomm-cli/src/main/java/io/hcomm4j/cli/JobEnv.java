package io.hcomm4j.cli;

import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.JobEnvironment;
import java.util.Map;
import java.util.Optional;

/**
 * This process's place in a job that something else started ({@code hcomm launch}, torchrun, mpirun, Hydra, srun, an
 * Indexed Job), read by the same rule as init ({@link JobEnvironment}), so that {@code hcomm perf} and {@code hcomm tune}
 * run as a rank exactly when {@code Hcomm.init()} would find one.
 *
 * @param rank      this process's rank
 * @param worldSize number of ranks
 */
record JobEnv(int rank, int worldSize) {
    /**
     * The job this process runs in, or empty when it was started on its own.
     *
     * @throws IllegalArgumentException the variables contradict each other or are not valid numbers (a usage error)
     */
    static Optional<JobEnv> detect(Map<String, String> env) {
        Optional<JobEnvironment.Placement> p;
        try {
            p = JobEnvironment.detect(env);
        } catch (HcommException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        // `srun -n1 hcomm perf` is how one runs any command on a node, not a one-rank job: perf starts its own ranks.
        return p.filter(j -> !(j.source() == JobEnvironment.Source.SLURM && j.worldSize() == 1))
                .map(j -> new JobEnv(j.rank(), j.worldSize()));
    }
}
