package io.hcomm4j.cli;

import java.util.Map;
import java.util.Optional;

/**
 * This process's place in a job that something else started, read from the environment:
 * {@code hcomm launch} and torchrun (RANK, WORLD_SIZE), Open MPI's mpirun (OMPI_COMM_WORLD_RANK,
 * OMPI_COMM_WORLD_SIZE) or Slurm's srun with more than one task (SLURM_PROCID, SLURM_NTASKS).
 *
 * @param rank      this process's rank
 * @param worldSize number of ranks
 */
record JobEnv(int rank, int worldSize) {
    /** The job this process runs in, or empty when it was started on its own. */
    static Optional<JobEnv> detect(Map<String, String> env) {
        Optional<JobEnv> job = read(env, "RANK", "WORLD_SIZE")
                .or(() -> read(env, "HCOMM_RANK", "HCOMM_WORLD_SIZE"))
                .or(() -> read(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"));
        if (job.isPresent()) return job;
        // Inside an allocation every srun step sets these, so only a step of several tasks is a job.
        return read(env, "SLURM_PROCID", "SLURM_NTASKS").filter(j -> j.worldSize() > 1);
    }

    private static Optional<JobEnv> read(Map<String, String> env, String rankVar, String sizeVar) {
        String rank = env.get(rankVar);
        String size = env.get(sizeVar);
        if (rank == null || size == null) return Optional.empty();
        try {
            int r = Integer.parseInt(rank.trim());
            int s = Integer.parseInt(size.trim());
            return r >= 0 && s >= 1 && r < s ? Optional.of(new JobEnv(r, s)) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }
}
