package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Plain double-precision forwards of the two models, written from the PyTorch script rather than from the Java
 * models (loops, no kernels, no workspaces), to check the models' forward: the gradient checks compare backward with
 * forward, and would pass a forward that computes the wrong function consistently.
 */
final class Reference {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    /** Numerical Recipes' 28 Chebyshev coefficients of erfc: about 1e-16 relative in double. */
    private static final double[] COF = {-1.3026537197817094, 6.4196979235649026e-1,
        1.9476473204185836e-2, -9.561514786808631e-3, -9.46595344482036e-4,
        3.66839497852761e-4, 4.2523324806907e-5, -2.0278578112534e-5,
        -1.624290004647e-6, 1.303655835580e-6, 1.5626441722e-8, -8.5238095915e-8,
        6.529054439e-9, 5.059343495e-9, -9.91364156e-10, -2.27365122e-10,
        9.6467911e-11, 2.394038e-12, -6.886027e-12, 8.94487e-13, 3.13092e-13,
        -1.12708e-13, 3.81e-16, 7.106e-15, -1.523e-15, -9.4e-17, 1.21e-16, -2.8e-17};

    private Reference() {
    }

    /** erfc in double. */
    static double erfc(double x) {
        double z = Math.abs(x), t = 2 / (2 + z), ty = 4 * t - 2, d = 0, dd = 0;
        for (int j = COF.length - 1; j > 0; j--) {
            double tmp = d;
            d = ty * d - dd + COF[j];
            dd = tmp;
        }
        double r = t * Math.exp(-z * z + 0.5 * (COF[0] + ty * d) - dd);
        return x >= 0 ? r : 2 - r;
    }

    /** torch.nn.GELU(): x·Φ(x). */
    static double gelu(double x) {
        return 0.5 * x * erfc(-x / Math.sqrt(2));
    }

    /** A parameter tensor as a double array, by name. */
    private static final class Params {
        final Map<String, double[]> byName = new HashMap<>();

        Params(List<Tensor> tensors, MemorySegment p) {
            for (Tensor t : tensors) {
                double[] a = new double[(int) t.count()];
                for (int i = 0; i < a.length; i++) {
                    a[i] = p.getAtIndex(F, t.offset() + i);
                }
                byName.put(t.name(), a);
            }
        }

        double[] get(String name) {
            return byName.get(name);
        }
    }

    /** The GPT's mean cross-entropy on a batch. */
    static double gptLoss(GptConfig c, List<Tensor> tensors, MemorySegment params, TokenBatch batch) {
        Params p = new Params(tensors, params);
        int d = c.dim(), t = c.context(), v = c.vocab(), hd = c.headDim();
        double[] tok = p.get("tok.weight"), pos = p.get("pos.weight");
        double[] head = c.tied() ? tok : p.get("head.weight");
        double total = 0;
        for (int b = 0; b < c.batch(); b++) {
            double[][] x = new double[t][d];
            for (int i = 0; i < t; i++) {
                for (int j = 0; j < d; j++) {
                    x[i][j] = tok[batch.input(b, i) * d + j] + pos[i * d + j];
                }
            }
            for (int l = 0; l < c.layers(); l++) {
                String n = "blocks." + l + ".";
                double[][] qkv = linear(layerNorm(x, p.get(n + "ln1.weight"), p.get(n + "ln1.bias")),
                        p.get(n + "qkv.weight"), p.get(n + "qkv.bias"), 3 * d);
                double[][] att = new double[t][d];
                for (int h = 0; h < c.heads(); h++) {
                    for (int i = 0; i < t; i++) {
                        double[] s = new double[i + 1];
                        double max = Double.NEGATIVE_INFINITY;
                        for (int j = 0; j <= i; j++) {
                            double dot = 0;
                            for (int e = 0; e < hd; e++) {
                                dot += qkv[i][h * hd + e] * qkv[j][d + h * hd + e];
                            }
                            s[j] = dot / Math.sqrt(hd);
                            max = Math.max(max, s[j]);
                        }
                        double sum = 0;
                        for (int j = 0; j <= i; j++) {
                            s[j] = Math.exp(s[j] - max);
                            sum += s[j];
                        }
                        for (int j = 0; j <= i; j++) {
                            for (int e = 0; e < hd; e++) {
                                att[i][h * hd + e] += s[j] / sum * qkv[j][2 * d + h * hd + e];
                            }
                        }
                    }
                }
                add(x, linear(att, p.get(n + "proj.weight"), p.get(n + "proj.bias"), d));
                double[][] f = linear(layerNorm(x, p.get(n + "ln2.weight"), p.get(n + "ln2.bias")),
                        p.get(n + "mlp.0.weight"), p.get(n + "mlp.0.bias"), 4 * d);
                for (double[] row : f) {
                    for (int j = 0; j < row.length; j++) {
                        row[j] = gelu(row[j]);
                    }
                }
                add(x, linear(f, p.get(n + "mlp.2.weight"), p.get(n + "mlp.2.bias"), d));
            }
            double[][] xf = layerNorm(x, p.get("ln_f.weight"), p.get("ln_f.bias"));
            for (int i = 0; i < t; i++) {
                double[] logits = new double[v];
                double max = Double.NEGATIVE_INFINITY;
                for (int w = 0; w < v; w++) {
                    for (int j = 0; j < d; j++) {
                        logits[w] += xf[i][j] * head[w * d + j];
                    }
                    max = Math.max(max, logits[w]);
                }
                double sum = 0;
                for (double z : logits) {
                    sum += Math.exp(z - max);
                }
                total += Math.log(sum) + max - logits[batch.target(b, i)];
            }
        }
        return total / (c.batch() * t);
    }

    /** x·W + b, W stored [in][out]. */
    static double[][] linear(double[][] x, double[] w, double[] b, int out) {
        int in = x[0].length;
        double[][] y = new double[x.length][out];
        for (int r = 0; r < x.length; r++) {
            for (int o = 0; o < out; o++) {
                double s = b == null ? 0 : b[o];
                for (int i = 0; i < in; i++) {
                    s += x[r][i] * w[i * out + o];
                }
                y[r][o] = s;
            }
        }
        return y;
    }

    static double[][] layerNorm(double[][] x, double[] w, double[] b) {
        double[][] y = new double[x.length][];
        for (int r = 0; r < x.length; r++) {
            int n = x[r].length;
            double mean = 0, var = 0;
            for (double v : x[r]) {
                mean += v / n;
            }
            for (double v : x[r]) {
                var += (v - mean) * (v - mean) / n;
            }
            y[r] = new double[n];
            for (int i = 0; i < n; i++) {
                y[r][i] = (x[r][i] - mean) / Math.sqrt(var + 1e-5) * w[i] + b[i];
            }
        }
        return y;
    }

    private static void add(double[][] x, double[][] y) {
        for (int r = 0; r < x.length; r++) {
            for (int i = 0; i < x[r].length; i++) {
                x[r][i] += y[r][i];
            }
        }
    }

    /** The MLP's forward on a batch: its mean squared error, and each hidden layer's pre-activations [row][unit]. */
    record MlpForward(double loss, double[][][] hidden) {
        /** The smallest |pre-activation| of any ReLU. */
        double nearestKink() {
            double m = Double.POSITIVE_INFINITY;
            for (int l = 0; l < hidden.length; l++) {
                for (int u = 0; u < hidden[l][0].length; u++) {
                    m = Math.min(m, nearest(l, u));
                }
            }
            return m;
        }

        /** The smallest |pre-activation| of one hidden unit over the batch. */
        double nearest(int layer, int unit) {
            double m = Double.POSITIVE_INFINITY;
            for (double[] row : hidden[layer]) {
                m = Math.min(m, Math.abs(row[unit]));
            }
            return m;
        }
    }

    static MlpForward mlp(Mlp model, MemorySegment params, RowBatch batch) {
        Params p = new Params(model.tensors(), params);
        int[] w = model.config().widths();
        int layers = w.length - 1;
        double[][] x = new double[batch.rows().length][w[0]];
        for (int r = 0; r < x.length; r++) {
            for (int i = 0; i < w[0]; i++) {
                x[r][i] = model.input(batch.rows()[r], i);
            }
        }
        double[][][] hidden = new double[layers - 1][][];
        for (int l = 0; l < layers; l++) {
            x = linear(x, p.get("net." + 2 * l + ".weight"), p.get("net." + 2 * l + ".bias"), w[l + 1]);
            if (l < layers - 1) {
                hidden[l] = new double[x.length][];
                for (int r = 0; r < x.length; r++) {
                    hidden[l][r] = x[r].clone();
                    for (int i = 0; i < x[r].length; i++) {
                        x[r][i] = Math.max(0, x[r][i]);
                    }
                }
            }
        }
        double sum = 0;
        for (int r = 0; r < x.length; r++) {
            for (int i = 0; i < w[layers]; i++) {
                double e = x[r][i] - model.target(batch.rows()[r], i);
                sum += e * e;
            }
        }
        return new MlpForward(sum / (x.length * w[layers]), hidden);
    }
}
