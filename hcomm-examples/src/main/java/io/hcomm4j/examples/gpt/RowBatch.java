package io.hcomm4j.examples.gpt;

/**
 * A batch of the {@link Mlp}'s fixed examples, by index (with repetition, as torch.randint draws them).
 *
 * @param rows indices into the model's examples; not copied, not to be changed
 */
public record RowBatch(int[] rows) implements Batch {
}
