package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * Loading {@link PeerTransport} loads every heap segment kind and the request classes (see {@link EarlyClassLoading}),
 * watched in a fresh JVM by the JDK's own class-load events: in this test JVM earlier tests have loaded them already.
 */
class EarlyClassLoadingTest {

    @Test
    void thePeerTransportLoadsWhatWouldLaterDeoptimizeCompiledCode() throws Exception {
        Process p = new ProcessBuilder(Ranks.javaCommand(Child.class)).redirectErrorStream(true).start();
        p.getOutputStream().close();
        boolean exited = p.waitFor(60, TimeUnit.SECONDS);
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!exited) p.destroyForcibly();
        assertThat(exited).as(out).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        List<String> loaded = out.lines().filter(l -> l.startsWith("loaded ")).map(l -> l.substring(7)).toList();
        assertThat(loaded).as(out).contains("jdk.internal.foreign.HeapMemorySegmentImpl$OfByte",
                "jdk.internal.foreign.HeapMemorySegmentImpl$OfChar", "jdk.internal.foreign.HeapMemorySegmentImpl$OfShort",
                "jdk.internal.foreign.HeapMemorySegmentImpl$OfInt", "jdk.internal.foreign.HeapMemorySegmentImpl$OfFloat",
                "jdk.internal.foreign.HeapMemorySegmentImpl$OfLong", "jdk.internal.foreign.HeapMemorySegmentImpl$OfDouble",
                "java.util.concurrent.CancellationException", "io.hcomm4j.transport.RecvRequest");
    }

    /** The child: records class loads while it loads {@link PeerTransport}, prints what was loaded. */
    static final class Child {
        public static void main(String[] args) throws Exception {
            Path file = Files.createTempFile("early-class-loading", ".jfr");
            try (Recording r = new Recording()) {
                r.enable("jdk.ClassLoad");
                r.start();
                Class.forName("io.hcomm4j.transport.PeerTransport", true, Child.class.getClassLoader());
                r.stop();
                r.dump(file);
            }
            for (var e : RecordingFile.readAllEvents(file)) {
                RecordedClass c = e.getValue("loadedClass");
                if (c != null) System.out.println("loaded " + c.getName());
            }
            Files.delete(file);
        }
    }
}
