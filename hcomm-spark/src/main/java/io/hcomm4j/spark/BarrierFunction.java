package io.hcomm4j.spark;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The function a barrier stage runs per partition ({@code RDDBarrier.mapPartitions} takes a Scala function): the task
 * as a rank, its result keyed by rank so the driver can put the results in rank order.
 */
final class BarrierFunction<T, R>
        extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<Tuple2<Integer, R>>>
        implements Serializable {
    private static final long serialVersionUID = 1L;
    private final TaskSpec spec;
    private final RankTask<T, R> task;

    BarrierFunction(TaskSpec spec, RankTask<T, R> task) {
        this.spec = spec;
        this.task = task;
    }

    @Override
    public scala.collection.Iterator<Tuple2<Integer, R>> apply(scala.collection.Iterator<T> rows) {
        BarrierTaskContext ctx = BarrierTaskContext.get();
        R result;
        try {
            result = RankSession.run(ctx, spec, task, CollectionConverters.asJava(rows));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("rank " + ctx.partitionId() + " of stage " + ctx.stageId() + " attempt "
                    + ctx.stageAttemptNumber() + " failed: " + e, e);
        }
        return CollectionConverters.asScala(List.of(new Tuple2<>(ctx.partitionId(), result)).iterator());
    }
}
