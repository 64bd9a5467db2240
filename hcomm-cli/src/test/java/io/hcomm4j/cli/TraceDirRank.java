package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import java.nio.file.Path;

/**
 * A rank of {@link LaunchTraceTest}'s job: two all-reduces, then its flight record into the HCOMM_TRACE_DIR that
 * {@code hcomm launch} gave it.
 */
public final class TraceDirRank {
    private TraceDirRank() {
    }

    public static void main(String[] args) {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            long[] v = {1, 2};
            comm.allReduce(v, ReduceOp.SUM);
            comm.allReduce(v, ReduceOp.MAX);
            String dir = System.getenv("HCOMM_TRACE_DIR");
            if (dir == null) {
                System.out.println("NO HCOMM_TRACE_DIR");
            } else {
                comm.dumpTrace(Path.of(dir).resolve("hcomm-trace-rank" + comm.rank() + ".json"));
                System.out.println("DUMPED " + dir);
            }
        }
        System.exit(0);
    }
}
