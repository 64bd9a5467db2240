/**
 * Reduction kernels: the element-wise arithmetic of reducing collectives, {@link io.hcomm4j.kernel.ReduceKernel}.
 *
 * <p>Each (type, op) the op defines ({@link io.hcomm4j.ReduceOp#accepts}) has a scalar kernel and, when the JVM runs
 * with {@code --add-modules jdk.incubator.vector}, a Vector API kernel that computes the same bits: the vector loops
 * cover whole vectors and hand the remainder to the scalar loops, and the 16-bit float formats are converted with
 * integer bit operations that reproduce {@link java.lang.Float#float16ToFloat}/{@link java.lang.Float#floatToFloat16}
 * and bfloat16 round-to-nearest-even exactly. A user's {@link io.hcomm4j.ReduceFunction} becomes a kernel too ({@code FunctionKernel}), called where the
 * built-in ones would be. Only {@code ReduceKernel} is public; everything that mentions {@code jdk.incubator.vector} is
 * loaded after a guarded check, so the package works without the module.
 */
package io.hcomm4j.kernel;
