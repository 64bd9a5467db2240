package io.hcomm4j.examples.gpt;

/**
 * A language-model batch: {@code rows} windows of {@code context + 1} tokens, row after row in one array; a row's
 * first {@code context} tokens are the input, its last {@code context} the targets (the next token at each position).
 *
 * @param rows    windows
 * @param context input tokens per window
 * @param tokens  {@code rows × (context + 1)} tokens; not copied, not to be changed
 */
public record TokenBatch(int rows, int context, int[] tokens) implements Batch {
    /** Checks the shape. */
    public TokenBatch {
        if (rows <= 0 || context <= 0 || tokens.length != rows * (context + 1)) {
            throw new IllegalArgumentException("need " + rows + " x " + (context + 1) + " tokens, got " + tokens.length);
        }
    }

    /** The input token at position t of window r. */
    public int input(int r, int t) {
        return tokens[r * (context + 1) + t];
    }

    /** The target at position t of window r: the token after the input there. */
    public int target(int r, int t) {
        return tokens[r * (context + 1) + t + 1];
    }
}
