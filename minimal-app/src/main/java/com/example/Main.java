package com.example;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;

/**
 * One rank of a job: joins it ({@code Hcomm.init} reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and HCOMM_SECRET, as
 * {@code hcomm launch} and torchrun set them), all-reduces a vector in which rank r holds r + 1 + i at element i, checks
 * every element against the sum, and prints one line.
 */
public final class Main {
    public static void main(String[] args) {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator world = hcomm.world();
            int rank = world.rank(), size = world.size();
            float[] v = new float[1 << 16];
            for (int i = 0; i < v.length; i++) v[i] = rank + 1 + i;
            world.allReduce(v, ReduceOp.SUM);
            int wrong = 0;
            for (int i = 0; i < v.length; i++) {
                float expected = size * (size + 1) / 2f + (float) size * i;
                if (v[i] != expected) wrong++;
            }
            System.out.printf("rank %d of %d: all-reduce of %d floats, %d wrong%n", rank, size, v.length, wrong);
            if (wrong != 0) System.exit(1);
        }
    }
}
