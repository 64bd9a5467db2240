package io.hcomm4j.examples.gpt;

import java.util.ArrayList;
import java.util.List;

/** Builds a flat buffer's list of tensors, each placed right after the one before. */
final class Layout {
    private final List<Tensor> tensors = new ArrayList<>();
    private long next;

    /** Appends a tensor; returns its index. */
    int add(String name, long count) {
        tensors.add(new Tensor(name, next, count));
        next += count;
        return tensors.size() - 1;
    }

    /** Tensors so far. */
    int size() {
        return tensors.size();
    }

    /** The tensors, in the order added. */
    List<Tensor> tensors() {
        return List.copyOf(tensors);
    }

    /** Floats of the whole buffer. */
    long floats() {
        return next;
    }
}
