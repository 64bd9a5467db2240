package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.LargeWorker;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * One message beyond 2 GiB between two processes, every byte checked. Needs about 5 GiB of memory and a few
 * seconds; skip it with {@code -Dhcomm.test.excludedGroups=large}, run it alone with {@code -Dtest=LargeTransferTest}.
 */
@Tag("large")
@Tag("serial")
class LargeTransferTest {
    @Test
    void messageBeyondTwoGibibytes() throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, LargeWorker.class, Duration.ofMinutes(5));
        assertThat(out.get(1).output()).contains("received and checked " + ((2L << 30) + 5) + " bytes");
        System.out.print(out.get(0).output());
        System.out.print(out.get(1).output());
    }
}
