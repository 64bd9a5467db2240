package io.hcomm4j.examples.gpt;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * The GPT's training text, as torch_ddp_bench.py's make_batches builds it: the files of
 * {@code /usr/share/common-licenses} (sorted by name, regular files and links to them) concatenated, each byte a
 * token modulo the vocabulary; 1 MiB of seeded random bytes instead if that gives no more than context + 1 bytes.
 * Each (step, rank) draws its windows from its own seed, the script's {@code (seed·1000003 + step)·1009 + rank},
 * so ranks see different windows and a rerun sees the same ones (torch's generator draws other numbers from that seed:
 * the windows are alike in kind, not equal).
 */
public final class TextData {
    /** Where the script reads its text. */
    public static final Path DEFAULT_DIR = Path.of("/usr/share/common-licenses");
    private static final int RANDOM_BYTES = 1 << 20;

    private final int[] tokens;
    private final String source;

    private TextData(int[] tokens, String source) {
        this.tokens = tokens;
        this.source = source;
    }

    /** The script's data for this vocabulary and context, from {@link #DEFAULT_DIR}. */
    public static TextData load(int vocab, int context, long seed) {
        return load(DEFAULT_DIR, vocab, context, seed);
    }

    /** The script's data from dir (seeded random bytes if it is missing or too short). */
    public static TextData load(Path dir, int vocab, int context, long seed) {
        byte[] blob;
        int files;
        try {
            List<Path> names = new ArrayList<>();
            try (Stream<Path> s = Files.list(dir)) {
                s.filter(Files::isRegularFile).forEach(names::add);
            }
            names.sort((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString()));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (Path p : names) {
                out.write(Files.readAllBytes(p));
            }
            blob = out.toByteArray();
            files = names.size();
        } catch (IOException | UncheckedIOException e) {
            blob = new byte[0];
            files = 0;
        }
        int[] tokens;
        String source;
        if (blob.length > context + 1) {
            tokens = new int[blob.length];
            for (int i = 0; i < blob.length; i++) {
                tokens[i] = (blob[i] & 0xff) % vocab;
            }
            source = dir + ": " + files + " files, " + blob.length + " bytes";
        } else {
            SplittableRandom r = new SplittableRandom(seed);
            tokens = new int[RANDOM_BYTES];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = r.nextInt(256) % vocab;
            }
            source = dir + " missing or empty: seeded random bytes instead";
        }
        return new TextData(tokens, source);
    }

    /** The script's per-(step, rank) seed. */
    public static long seedOf(long seed, long step, int rank) {
        return (seed * 1_000_003L + step) * 1_009L + rank;
    }

    /** batch windows of context + 1 tokens at seeded random places, for this (step, rank). */
    public TokenBatch batch(long seed, long step, int rank, int batch, int context) {
        if (tokens.length <= context + 1) {
            throw new IllegalArgumentException("text of " + tokens.length + " tokens, context " + context);
        }
        SplittableRandom r = new SplittableRandom(seedOf(seed, step, rank));
        int w = context + 1;
        int[] out = new int[batch * w];
        for (int b = 0; b < batch; b++) {
            int start = r.nextInt(tokens.length - context - 1);
            System.arraycopy(tokens, start, out, b * w, w);
        }
        return new TokenBatch(batch, context, out);
    }

    /** Tokens in the text. */
    public int size() {
        return tokens.length;
    }

    /** Token i. */
    public int token(int i) {
        return tokens[i];
    }

    /** What the text is, as the script prints it. */
    public String source() {
        return source;
    }
}
