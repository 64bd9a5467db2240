package io.hcomm4j.spark;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Hcomm;
import io.hcomm4j.StoreServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Iterator;
import org.apache.spark.BarrierTaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A barrier task's life as a rank, on the executor: join the stage attempt's session, run the body, leave. */
final class RankSession {
    private static final Logger LOG = LoggerFactory.getLogger(RankSession.class);

    private RankSession() {
    }

    /** Store keys of one stage attempt: a retried stage starts afresh on the driver's store, whatever its last attempt left. */
    static String scope(BarrierTaskContext ctx) {
        return "spark/stage-" + ctx.stageId() + "." + ctx.stageAttemptNumber();
    }

    /**
     * Runs {@code task} as rank {@code ctx.partitionId()} of a session of all the stage's tasks. A body that fails
     * aborts the communicator first, so the other ranks' pending collectives fail within milliseconds rather than wait
     * for a peer that has left; a task Spark kills (the stage failed elsewhere) aborts it the same way.
     */
    static <T, R> R run(BarrierTaskContext ctx, TaskSpec spec, RankTask<T, R> task, Iterator<T> rows) throws Exception {
        int rank = ctx.partitionId();
        StoreServer own = null;
        Hcomm hcomm = null;
        try {
            String method = spec.storeMethod;
            if (method == null) {
                // partition 0 serves this attempt's store; allGather (a barrier too) tells everyone where, once it listens
                String host = host(ctx.getTaskInfos()[0].address());
                if (rank == 0) own = StoreServer.start(new InetSocketAddress(0), spec.secret);
                method = ctx.allGather(own != null ? own.initMethod(host) : "")[0];
            }
            hcomm = Hcomm.init(config(ctx, spec, method));
            Hcomm session = hcomm;
            ctx.addTaskInterruptListener((c, reason) -> {
                LOG.info("rank {} of stage {} attempt {} killed ({}): aborting its communicator", rank, c.stageId(),
                        c.stageAttemptNumber(), reason);
                session.world().abort();
            });
            if (ctx.isInterrupted()) hcomm.world().abort();
            R result = task.run(new SparkRank(hcomm, ctx), rows);
            // partition 0's store goes away with its task: the others must be past their last read of it (init) first
            if (spec.storeMethod == null) hcomm.world().barrier();
            return result;
        } catch (Exception | Error e) {
            if (hcomm != null) hcomm.world().abort();
            LOG.warn("rank {} of stage {} attempt {} failed: {}", rank, ctx.stageId(), ctx.stageAttemptNumber(), e.toString());
            throw e;
        } finally {
            try {
                if (hcomm != null) hcomm.close();
            } finally {
                if (own != null) own.close();
            }
        }
    }

    private static CommConfig config(BarrierTaskContext ctx, TaskSpec spec, String storeMethod) {
        CommConfig.Builder b = CommConfig.builderFromEnvironment();
        if (spec.configurer != null) {
            b = spec.configurer.configure(b);
            if (b == null) throw new IllegalStateException("the TaskConfigurer returned null instead of a CommConfig.Builder");
        }
        b.rank(ctx.partitionId()).worldSize(ctx.getTaskInfos().length).initMethod(storeMethod).storeHosted(true)
                .secret(spec.secret).storeScope(scope(ctx));
        // partition 0's store lives and dies with its task: nothing would come back to reconnect to
        if (spec.storeMethod == null) b.storeReconnect(Duration.ZERO);
        return b.build();
    }

    /** The host of a BarrierTaskInfo address ({@code host:port}, an IPv6 host possibly in brackets). */
    static String host(String address) {
        int colon = address.lastIndexOf(':');
        String h = colon > 0 ? address.substring(0, colon) : address;
        return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    }
}
