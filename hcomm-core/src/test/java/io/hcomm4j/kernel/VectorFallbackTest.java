package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM started without {@code --add-modules jdk.incubator.vector} (a user's plain {@code java -cp ...}) gets working
 * scalar kernels from {@link ReduceKernel#of}, not a {@link NoClassDefFoundError}.
 */
class VectorFallbackTest {

    @Test
    void withoutTheModuleOfReturnsScalarKernels() throws Exception {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        Process p = new ProcessBuilder(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), WithoutVectorModule.class.getName())
                .redirectErrorStream(true).start();
        p.getOutputStream().close();
        boolean exited = p.waitFor(60, TimeUnit.SECONDS);
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!exited) {
            p.destroyForcibly();
        }
        assertThat(exited).as("child JVM exited; output:%n%s", out).isTrue();
        assertThat(p.exitValue()).as("exit code; output:%n%s", out).isZero();
        assertThat(out.lines().toList()).as(out)
                .contains("available=false", "api=false", "kernel=ReduceKernel[FLOAT32 SUM, scalar]", "sum=[11.0, 22.0, 33.0]");
    }

    /** The public answer ({@link io.hcomm4j.Hcomm#vectorReductions()}) is the kernels' own, here (with the module) too. */
    @Test
    void thePublicCallSaysWhatTheKernelsAre() {
        assertThat(io.hcomm4j.Hcomm.vectorReductions()).isEqualTo(ReduceKernel.vectorAvailable());
        assertThat(ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM).toString())
                .contains(io.hcomm4j.Hcomm.vectorReductions() ? ", vector" : ", scalar");
    }

    /** The child: what {@link ReduceKernel} gives a JVM without the module, and whether it computes. */
    static final class WithoutVectorModule {
        public static void main(String[] args) {
            System.out.println("available=" + ReduceKernel.vectorAvailable());
            System.out.println("api=" + io.hcomm4j.Hcomm.vectorReductions());
            ReduceKernel k = ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM);
            System.out.println("kernel=" + k);
            float[] acc = {1, 2, 3};
            k.accumulate(MemorySegment.ofArray(acc), 0, MemorySegment.ofArray(new float[] {10, 20, 30}), 0, 3);
            System.out.println("sum=" + List.of(acc[0], acc[1], acc[2]));
        }
    }
}
