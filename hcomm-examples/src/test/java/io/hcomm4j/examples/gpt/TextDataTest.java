package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GPT's text and windows, as the script's make_batches builds them. */
class TextDataTest {
    @Test
    void filesAreConcatenatedInNameOrderModuloTheVocabulary(@TempDir Path dir) throws IOException {
        Files.write(dir.resolve("b"), new byte[] {10, 11, 12});
        Files.write(dir.resolve("a"), new byte[] {1, 2, (byte) 200});
        Files.write(dir.resolve("C"), new byte[] {7});   // upper case sorts first, as Python's sorted()
        Files.createDirectory(dir.resolve("a-directory"));
        TextData t = TextData.load(dir, 100, 2, 0);
        int[] got = new int[t.size()];
        Arrays.setAll(got, t::token);
        assertThat(got).containsExactly(7, 1, 2, 0, 10, 11, 12);   // 200 % 100
        assertThat(t.source()).endsWith(": 3 files, 7 bytes");
    }

    @Test
    void aMissingOrShortTextIsSeededRandomBytes(@TempDir Path dir) throws IOException {
        Files.write(dir.resolve("x"), new byte[] {1, 2, 3});
        TextData shortText = TextData.load(dir, 256, 8, 4);
        TextData missing = TextData.load(dir.resolve("nowhere"), 256, 8, 4);
        assertThat(shortText.size()).isEqualTo(1 << 20);
        assertThat(missing.source()).contains("seeded random bytes");
        int[] a = new int[1000], b = new int[1000];
        Arrays.setAll(a, shortText::token);
        Arrays.setAll(b, missing::token);
        assertThat(a).containsExactly(b);
        assertThat(Arrays.stream(a).distinct().count()).isGreaterThan(200);
        Arrays.setAll(b, TextData.load(dir.resolve("nowhere"), 256, 8, 5)::token);
        assertThat(Arrays.equals(a, b)).isFalse();
    }

    @Test
    void windowsAreRunsOfTheTextSeededByStepAndRank() {
        TextData t = TextData.load(256, 32, 0);
        assertThat(t.source()).startsWith(TextData.DEFAULT_DIR.toString());
        assertThat(t.size()).isGreaterThan(100_000);   // the Debian licences: about 240 KB
        TokenBatch b = t.batch(0, 3, 1, 8, 32);
        assertThat(b.rows()).isEqualTo(8);
        assertThat(b.tokens()).hasSize(8 * 33);
        for (int r = 0; r < 8; r++) {
            int[] w = Arrays.copyOfRange(b.tokens(), r * 33, r * 33 + 33);
            assertThat(occursIn(t, w)).as("window %d is a run of the text", r).isTrue();
            for (int i = 0; i < 32; i++) {
                assertThat(b.target(r, i)).isEqualTo(b.input(r, i + 1));
            }
        }
        assertThat(t.batch(0, 3, 1, 8, 32).tokens()).containsExactly(b.tokens());
        assertThat(Arrays.equals(t.batch(0, 3, 0, 8, 32).tokens(), b.tokens())).isFalse();
        assertThat(Arrays.equals(t.batch(0, 4, 1, 8, 32).tokens(), b.tokens())).isFalse();
        assertThat(Arrays.equals(t.batch(1, 3, 1, 8, 32).tokens(), b.tokens())).isFalse();
        assertThat(TextData.seedOf(2, 5, 1)).isEqualTo((2 * 1_000_003L + 5) * 1_009 + 1);
    }

    private static boolean occursIn(TextData t, int[] w) {
        outer:
        for (int s = 0; s + w.length <= t.size(); s++) {
            for (int i = 0; i < w.length; i++) {
                if (t.token(s + i) != w[i]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
