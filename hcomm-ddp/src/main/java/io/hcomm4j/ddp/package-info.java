/**
 * Data-parallel training on HComm4J, the way PyTorch's DistributedDataParallel does it: {@link
 * io.hcomm4j.ddp.DataParallel} holds a model's parameters and gradients in two registered flat float32 buffers,
 * groups the gradients into buckets in reverse order of the forward pass, all-reduces each bucket as soon as backward
 * has finished its gradients (while backward goes on with the rest), and waits once, before the optimizer step.
 * {@link io.hcomm4j.ddp.CommHook} decides how a bucket is reduced: an average in float32 by default, or compressed to
 * bfloat16 or float16 on the wire.
 */
package io.hcomm4j.ddp;
