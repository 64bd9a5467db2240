package io.hcomm4j.examples;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * What the example programs share: running a rank's body and turning its outcome into an exit code, the
 * result line every rank prints, options of the form {@code --name value}, and a hash of float arrays. Kept small
 * on purpose: each example should read on its own.
 */
final class Examples {
    private Examples() {
    }

    /**
     * Runs one rank's body and exits the JVM with its code: 0 when the body returned true (its checks passed), 1 when
     * it returned false or threw. An exception is printed in full on stderr, so a failed rank says why.
     */
    static void exit(String example, Callable<Boolean> body) {
        int code;
        try {
            code = body.call() ? 0 : 1;
        } catch (Throwable t) {
            System.err.println(example + ": failed with " + t);
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        // System.exit and not a return: an exit code is the contract with the launcher (hcomm launch, mpirun, srun,
        // a Kubernetes Job), and a library thread left by a failed rank must not keep the JVM alive.
        System.exit(code);
    }

    /**
     * Prints the rank's result line, {@code <example> rank R/N <role>: <what happened>: OK} or {@code ... : FAILED},
     * and returns {@code ok}. One line, one {@code println}: launchers copy whole lines, so the ranks' lines never mix.
     */
    static boolean result(String example, int rank, int size, String role, String detail, boolean ok) {
        System.out.println(example + " rank " + rank + "/" + size + (role.isEmpty() ? "" : " " + role) + ": " + detail
                + ": " + (ok ? "OK" : "FAILED"));
        return ok;
    }

    /** {@code String.format} in the ROOT locale: the result lines are parsed by tests, decimal commas would break them. */
    static String fmt(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }

    /** FNV-1a over the raw bits of every element: equal hashes mean bit-identical arrays (with overwhelming odds). */
    static long hash(float[] values) {
        return hash(java.lang.foreign.MemorySegment.ofArray(values), values.length);
    }

    /** {@link #hash(float[])} of the first {@code count} floats of a segment, without copying them out. */
    static long hash(java.lang.foreign.MemorySegment floats, long count) {
        long h = 0xcbf29ce484222325L;
        for (long i = 0; i < count; i++) {
            h ^= Float.floatToRawIntBits(floats.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i));
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** Every rank's {@code hash}, all-gathered, in rank order: equal entries mean bit-identical replicas. */
    static long[] allHashes(io.hcomm4j.Communicator comm, long hash) {
        long[] all = new long[comm.size()];
        comm.allGather(new long[] {hash}, all);
        return all;
    }

    /** {@link #hash(float[])} for longs. */
    static long hash(long[] values) {
        long h = 0xcbf29ce484222325L;
        for (long v : values) {
            h ^= v;
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** Options of the form {@code --name value}; every example has defaults that pass its checks. */
    static final class Options {
        private final Map<String, String> values = new HashMap<>();

        /** Parses {@code args}; a name not in {@code known} is an error (a typo must not silently run the defaults). */
        Options(String[] args, String... known) {
            java.util.List<String> names = java.util.List.of(known);
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (!a.startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("expected options of the form --name value, got '" + a + "'");
                }
                if (!names.contains(a.substring(2))) {
                    throw new IllegalArgumentException("unknown option " + a + "; known: --" + String.join(", --", names));
                }
                values.put(a.substring(2), args[++i]);
            }
        }

        int intValue(String name, int def) {
            String v = values.get(name);
            return v == null ? def : Integer.parseInt(v.trim());
        }

        String stringValue(String name, String def) {
            String v = values.get(name);
            return v == null ? def : v.trim();
        }

        double doubleValue(String name, double def) {
            String v = values.get(name);
            return v == null ? def : Double.parseDouble(v.trim());
        }
    }
}
