package io.hcomm4j.spark;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Hcomm;
import io.hcomm4j.StoreServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Iterator;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskInterruptListener;
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
     * for a peer that has left; a task Spark kills (the stage failed elsewhere, the job was cancelled) aborts it the
     * same way, or, still in init, is interrupted out of its store waits.
     */
    static <T, R> R run(BarrierTaskContext ctx, TaskSpec spec, RankTask<T, R> task, Iterator<T> rows) throws Exception {
        int rank = ctx.partitionId();
        KillSwitch kill = new KillSwitch(rank, Thread.currentThread());
        ctx.addTaskInterruptListener(kill);
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
            kill.opened(hcomm);
            R result = task.run(new SparkRank(hcomm, ctx), rows);
            // partition 0's store goes away with its task: the others must be past their last read of it (init) first
            if (spec.storeMethod == null) hcomm.world().barrier();
            return result;
        } catch (Exception | Error e) {
            if (hcomm != null) hcomm.world().abort();
            LOG.warn("rank {} of stage {} attempt {} failed: {}", rank, ctx.stageId(), ctx.stageAttemptNumber(), e.toString());
            throw e;
        } finally {
            // an interrupt meant for init must not outlive the task: Spark reuses the thread for later tasks
            if (kill.done()) Thread.interrupted();
            try {
                if (hcomm != null) hcomm.close();
            } finally {
                if (own != null) own.close();
            }
        }
    }

    /**
     * What a kill does to a rank: Spark marks the task killed but by default leaves its thread alone, which may be
     * waiting for peers that will never come. Before the session exists the thread is interrupted (init's store calls
     * give up on an interrupt); once it exists the communicator is aborted.
     */
    private static final class KillSwitch implements TaskInterruptListener {
        private final int rank;
        private final Thread thread;
        private Hcomm session;
        private boolean killed;
        private boolean interrupted;
        private boolean done;

        KillSwitch(int rank, Thread thread) {
            this.rank = rank;
            this.thread = thread;
        }

        @Override
        public synchronized void onTaskInterrupted(TaskContext context, String reason) {
            if (done || killed) return;
            killed = true;
            LOG.info("rank {} of stage {} attempt {} killed ({}): {}", rank, context.stageId(), context.stageAttemptNumber(),
                    reason, session != null ? "aborting its communicator" : "interrupting its init");
            if (session != null) {
                session.world().abort();
            } else {
                interrupted = true;
                thread.interrupt();
            }
        }

        synchronized void opened(Hcomm hcomm) {
            session = hcomm;
            if (killed) hcomm.world().abort();
        }

        /** Ends the switch; true if it interrupted the task's thread. */
        synchronized boolean done() {
            done = true;
            return interrupted;
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
