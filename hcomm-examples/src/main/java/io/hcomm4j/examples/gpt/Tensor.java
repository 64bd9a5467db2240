package io.hcomm4j.examples.gpt;

/**
 * One parameter tensor's place in a model's flat parameter (and gradient) buffer.
 *
 * @param name   PyTorch's name for it, e.g. {@code blocks.0.qkv.weight}
 * @param offset first float element in the flat buffer
 * @param count  float elements
 */
public record Tensor(String name, long offset, long count) {
    /** Offset in bytes. */
    public long byteOffset() {
        return offset * Float.BYTES;
    }

    /** Size in bytes. */
    public long byteSize() {
        return count * Float.BYTES;
    }
}
