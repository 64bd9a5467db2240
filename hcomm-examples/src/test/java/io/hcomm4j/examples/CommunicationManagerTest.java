package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.examples.CommunicationManager.Pattern;
import io.hcomm4j.examples.ExamplesTest.Result;
import io.hcomm4j.examples.RankJobs.Outcome;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link CommunicationManager}, the seed example, as real jobs (every rank a JVM, torchrun's variables, rank 0 serving
 * the store): on 2 ranks at 4 KiB and 3 ranks at 64 MiB (the 2-rank 64 MiB job is the literal order's; an odd ring has
 * two even ranks side by side, so one even rank's send meets a rank that is itself in its send first), the order that
 * does not deadlock and the batch exchange deliver every element; the test recomputes what each rank's sender sent
 * from the seed and compares it with the hash of what the rank received. The literal order (every rank sends, then
 * receives) completes at 4 KiB and ends at 64 MiB in {@code CommTimeoutException} after the short {@code HCOMM_TIMEOUT}
 * it runs with, not in a hang.
 */
@Timeout(200)
class CommunicationManagerTest {
    /** A new seed per run, named in every assertion that depends on it. */
    private static final long SEED = new SplittableRandom().nextLong();
    /** {@code seed rank R/N: <size> <pattern>: <how>: all <ints> ints from rank <sender> correct (hash <hash>)}. */
    private static final java.util.regex.Pattern CHECKED = java.util.regex.Pattern.compile(
            "seed rank (\\d+)/(\\d+): (\\d+ [KM]iB) (ordered|exchange|literal): (.*): all (\\d+) ints from rank (\\d+) correct \\(hash ([0-9a-f]{16})\\)");

    /** Expected hashes by (bytes, pattern, sender): a 64 MiB message takes a moment to regenerate. */
    private final Map<String, Long> expectedHashes = new HashMap<>();

    /** The hash of what {@code sender} sends with {@code pattern} at {@code bytes}, recomputed here from the seed. */
    private long expectedHash(long bytes, Pattern pattern, int sender) {
        return expectedHashes.computeIfAbsent(bytes + "/" + pattern + "/" + sender, k -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment message = arena.allocate(bytes, 8);
                CommunicationManager.fill(message, SEED, pattern.ordinal(), sender);
                return CommunicationManager.hash(message);
            }
        });
    }

    private static List<Outcome> job(int n, String... args) throws Exception {
        String[] all = new String[args.length + 2];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "--seed";
        all[args.length + 1] = Long.toString(SEED);
        long t0 = System.nanoTime();
        List<Outcome> outcomes = RankJobs.torchrun(n, CommunicationManager.class, all);
        System.out.printf("CommunicationManagerTest %d ranks %s: %.1f s%n", n, String.join(" ", all), (System.nanoTime() - t0) / 1e9);
        return outcomes;
    }

    /** The checked-message line of {@code pattern} in rank {@code o}'s output, asserted to be there once. */
    private static Matcher checkedLine(Outcome o, Pattern pattern) {
        List<Matcher> found = o.lines().stream().map(CHECKED::matcher).filter(Matcher::matches)
                .filter(m -> m.group(4).equals(pattern.label())).toList();
        assertThat(found).as("rank %d's %s line (seed %d):\n%s", o.index(), pattern.label(), SEED, o.output()).hasSize(1);
        return found.getFirst();
    }

    /** Asserts rank {@code o} received, with {@code pattern}, exactly what its ring predecessor sent. */
    private void assertReceivedEveryElement(Outcome o, int n, String size, Pattern pattern) {
        long bytes = CommConfig.parseSize(size);
        int prev = (o.index() + n - 1) % n;
        Matcher m = checkedLine(o, pattern);
        assertThat(Integer.parseInt(m.group(1))).isEqualTo(o.index());
        assertThat(Integer.parseInt(m.group(2))).isEqualTo(n);
        assertThat(m.group(3)).isEqualTo(CommunicationManager.human(bytes));
        assertThat(Long.parseLong(m.group(6))).isEqualTo(bytes / Integer.BYTES);
        assertThat(Integer.parseInt(m.group(7))).isEqualTo(prev);
        assertThat(Long.parseUnsignedLong(m.group(8), 16))
                .as("rank %d: hash of the %s message received from rank %d against the one it sent (seed %d)", o.index(), pattern.label(), prev, SEED)
                .isEqualTo(expectedHash(bytes, pattern, prev));
    }

    @ParameterizedTest(name = "{0} ranks, {1}")
    @CsvSource({"2, 4K", "3, 64M"})
    void theOrderThatDoesNotDeadlockAndTheBatchDeliverEveryElementOnEveryRank(int n, String size) throws Exception {
        List<Outcome> outcomes = job(n, "--size", size);
        List<Result> results = ExamplesTest.passed("seed", n, outcomes);
        String human = CommunicationManager.human(CommConfig.parseSize(size));
        for (Outcome o : outcomes) {
            int next = (o.index() + 1) % n;
            int prev = (o.index() + n - 1) % n;
            assertReceivedEveryElement(o, n, size, Pattern.ORDERED);
            assertReceivedEveryElement(o, n, size, Pattern.EXCHANGE);
            assertThat(checkedLine(o, Pattern.ORDERED).group(5)).isEqualTo(o.index() % 2 == 0
                    ? "send(" + next + ") then recv(" + prev + ") (even rank: sends first)"
                    : "recv(" + prev + ") then send(" + next + ") (odd rank: receives first)");
            assertThat(results.get(o.index()).detail()).isEqualTo(human + " in a ring, ordered: every element from rank " + prev
                    + " correct; exchange: every element from rank " + prev + " correct");
            assertThat(o.output()).contains("cleanup: stream destroyed, buffers freed, communicator destroyed, session closed");
        }
    }

    @Test
    void theLiteralOrderCompletesBelowTheEagerLimit() throws Exception {
        List<Outcome> outcomes = job(2, "--size", "4K", "--pattern", "literal");
        List<Result> results = ExamplesTest.passed("seed", 2, outcomes);
        for (Outcome o : outcomes) {
            assertReceivedEveryElement(o, 2, "4K", Pattern.LITERAL);
            int peer = 1 - o.index();
            assertThat(results.get(o.index()).detail()).isEqualTo("4 KiB in a ring, literal: completed, as 4 KiB is at most"
                    + " HCOMM_EAGER_LIMIT (64 KiB), every element from rank " + peer + " correct");
        }
    }

    @Test
    void theLiteralOrderDeadlocksAboveTheEagerLimitAndEndsInCommTimeoutException() throws Exception {
        long t0 = System.nanoTime();
        List<Outcome> outcomes = job(2, "--size", "64M", "--pattern", "literal", "--timeout", "2s");
        double jobSeconds = (System.nanoTime() - t0) / 1e9;
        List<Result> results = ExamplesTest.passed("seed", 2, outcomes);
        java.util.regex.Pattern deadlocked = java.util.regex.Pattern.compile("64 MiB in a ring, literal: deadlocked, as 64 MiB is above"
                + " HCOMM_EAGER_LIMIT \\(64 KiB\\); CommTimeoutException after ([\\d.]+) s \\(HCOMM_TIMEOUT 2s\\)");
        for (Outcome o : outcomes) {
            Matcher m = deadlocked.matcher(results.get(o.index()).detail());
            assertThat(m.matches()).as(results.get(o.index()).detail()).isTrue();
            assertThat(Double.parseDouble(m.group(1))).as("it waited for the timeout, and no longer").isBetween(1.9, 60.0);
            assertThat(o.lines()).as("no message arrived").noneMatch(l -> CHECKED.matcher(l).matches());
            assertThat(o.output()).contains("CommTimeoutException: rank " + o.index() + ": ")
                    .contains("a likely deadlock: ranks " + o.index() + " -> " + (1 - o.index()) + " -> " + o.index()
                            + " each wait in a send for the next to post its receive");
        }
        // the rank JVMs' start and init take seconds on a busy machine; a hang would take the default HCOMM_TIMEOUT, 5 min
        assertThat(jobSeconds).isLessThan(240);
    }

    @Test
    void theCheckCatchesOneWrongElementAndTheDataDependOnSeedPatternAndSender() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment message = arena.allocate(4096, 8);
            CommunicationManager.fill(message, SEED, Pattern.ORDERED.ordinal(), 1);
            assertThat(CommunicationManager.wrongElements(message, SEED, Pattern.ORDERED.ordinal(), 1)).isZero();
            long hash = CommunicationManager.hash(message);

            int index = new SplittableRandom(SEED).nextInt(1024);
            message.setAtIndex(JAVA_INT, index, message.getAtIndex(JAVA_INT, index) ^ 1);
            assertThat(CommunicationManager.wrongElements(message, SEED, Pattern.ORDERED.ordinal(), 1)).isOne();
            assertThat(CommunicationManager.hash(message)).isNotEqualTo(hash);

            // a message from another sender, of another pattern or another run, or a zeroed buffer, fails nearly everywhere
            CommunicationManager.fill(message, SEED, Pattern.ORDERED.ordinal(), 1);
            assertThat(CommunicationManager.wrongElements(message, SEED, Pattern.ORDERED.ordinal(), 0)).isGreaterThan(1000);
            assertThat(CommunicationManager.wrongElements(message, SEED, Pattern.EXCHANGE.ordinal(), 1)).isGreaterThan(1000);
            assertThat(CommunicationManager.wrongElements(message, SEED + 1, Pattern.ORDERED.ordinal(), 1)).isGreaterThan(1000);
            message.fill((byte) 0);
            assertThat(CommunicationManager.wrongElements(message, SEED, Pattern.ORDERED.ordinal(), 1)).isGreaterThan(1000);
        }
    }
}
