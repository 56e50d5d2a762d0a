package org.ddp4j.tensor;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.function.Function;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The transformer tensor ops against PyTorch (golden/tensor_ops.json from
 * scripts/golden/tensor_ops_golden.py): forward values and every input's gradient, 1e-5 relative.
 */
class TensorOpsGoldenTest {
    private static final Golden G = Golden.load("tensor_ops");
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-6;

    /**
     * Runs op on the case's named inputs (float32 ones as leaves requiring grad), checks the output
     * against "case.y", runs backward with "case.gy" and checks each float input's gradient "case.g<name>".
     */
    static void check(String name, Function<Tensor[], Tensor> op, String... inputs) {
        try (var scope = Tensors.scope()) {
            Tensor[] in = new Tensor[inputs.length];
            for (int i = 0; i < inputs.length; i++) {
                in[i] = G.tensor(name + "." + inputs[i]);
                if (in[i].dtype() == DType.FLOAT32) {
                    in[i].requiresGrad(true);
                }
            }
            Tensor y = op.apply(in);
            assertClose(G.tensor(name + ".y"), y, RTOL, ATOL, name + " forward");
            y.backward(G.tensor(name + ".gy"));
            for (int i = 0; i < inputs.length; i++) {
                if (in[i].dtype() == DType.FLOAT32) {
                    assertClose(G.tensor(name + ".g" + inputs[i]), in[i].grad(), RTOL, ATOL, name + " gradient of " + inputs[i]);
                    in[i].clearGrad();
                }
            }
        }
    }

    private static void checkExact(String key, Tensor actual) {
        Tensor expected = G.tensor(key);
        assertArrayEquals(expected.shape(), actual.shape(), key + " shape");
        assertEquals(expected.dtype(), actual.dtype(), key + " dtype");
        if (actual.dtype() == DType.BOOL) {
            assertArrayEquals(expected.toBooleanArray(), actual.toBooleanArray(), key);
        } else {
            assertArrayEquals(expected.toLongArray(), actual.toLongArray(), key);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"mm", "batched_2d", "broadcast_batch", "vec_mat", "mat_vec", "dot", "batched_vec",
        "vec_batched", "bmm"})
    void matmul(String name) {
        check("matmul." + name, t -> t[0].matmul(t[1]), "a", "b");
    }

    @Test
    void transposePermuteView() {
        check("transpose", t -> t[0].transpose(0, 2), "x");
        check("transpose_neg", t -> t[0].transpose(-1, -2), "x");
        check("permute", t -> t[0].permute(2, 0, 3, 1), "x");
        check("view_infer", t -> t[0].view(-1, 6).view(3, -1, 2), "x");
    }

    @Test
    void catAndStack() {
        check("cat", t -> Tensor.cat(List.of(t[0], t[1], t[2]), -1), "a", "b", "c");
        check("cat0", t -> Tensor.cat(List.of(t[0], t[1]), 0), "a", "b");
        check("stack", t -> Tensor.stack(List.of(t[0], t[1], t[2]), 1), "a", "b", "c");
        check("stack_last", t -> Tensor.stack(List.of(t[0], t[1]), -1), "a", "b");
    }

    /** Each piece backward with its own gradient; the input's gradient gathers them all. */
    private static void checkPieces(String name, Function<Tensor, List<Tensor>> op) {
        try (var scope = Tensors.scope()) {
            Tensor x = G.tensor(name + ".x").requiresGrad(true);
            List<Tensor> pieces = op.apply(x);
            assertEquals((int) G.number(name + ".count"), pieces.size(), name + " pieces");
            for (int i = 0; i < pieces.size(); i++) {
                assertClose(G.tensor(name + ".y" + i), pieces.get(i), RTOL, ATOL, name + " piece " + i);
                pieces.get(i).backward(G.tensor(name + ".gy" + i));
            }
            assertClose(G.tensor(name + ".gx"), x.grad(), RTOL, ATOL, name + " gradient");
            x.clearGrad();
        }
    }

    @Test
    void splitAndChunk() {
        checkPieces("split_size", x -> x.split(2, 0));
        checkPieces("split_sizes", x -> x.split(new long[] {1, 3, 2}, 1));
        checkPieces("chunk", x -> x.chunk(3, -1));
    }

    @Test
    void indexSelectAndGather() {
        check("index_select0", t -> t[0].indexSelect(0, t[1]), "x", "index");
        check("index_select1", t -> t[0].indexSelect(1, t[1]), "x", "index");
        check("gather1", t -> t[0].gather(1, t[1]), "x", "index");
        check("gather0", t -> t[0].gather(0, t[1]), "x", "index");
    }

    @Test
    void trilTriuArange() {
        check("tril", t -> t[0].tril(0), "x");
        check("tril_neg", t -> t[0].tril(-1), "x");
        check("triu", t -> t[0].triu(1), "x");
        try (var scope = Tensors.scope()) {
            checkExact("tril_bool.y", Tensor.ones(DType.BOOL, 4, 4).tril(0));
            checkExact("triu_bool.y", Tensor.ones(DType.BOOL, 3, 5).triu(-1));
            checkExact("arange.y", Tensors.arange(7));
            checkExact("arange_step.y", Tensors.arange(-3, 10, 4));
            checkExact("arange_down.y", Tensors.arange(5, -4, -3));
        }
    }

    @Test
    void broadcastingArithmetic() {
        check("add", t -> t[0].add(t[1]), "a", "b");
        check("add_same", t -> t[0].add(t[1]), "a", "b");
        check("sub", t -> t[0].sub(t[1]), "a", "b");
        check("mul", t -> t[0].mul(t[1]), "a", "b");
        check("div", t -> t[0].div(t[1]), "a", "b");
        check("div_scalar_tensor", t -> t[0].div(t[1]), "a", "b");
        check("attn_bias", t -> t[0].add(t[1]), "s", "bias");
    }

    @Test
    void comparisonsAndMasks() {
        try (var scope = Tensors.scope()) {
            Tensor a = G.tensor("compare.a");
            Tensor b = G.tensor("compare.b");
            checkExact("compare.eq", a.eq(b));
            checkExact("compare.ne", a.ne(b));
            checkExact("compare.lt", a.lt(b));
            checkExact("compare.gt", a.gt(b));
            checkExact("compare.le", a.le(b));
            checkExact("compare.ge", a.ge(b));
            Tensor ia = G.tensor("compare_long.a");
            Tensor ib = G.tensor("compare_long.b");
            checkExact("compare_long.lt", ia.lt(ib));
            checkExact("compare_long.eq", ia.eq(ib));
            checkExact("logical_not.y", G.tensor("logical_not.x").logicalNot());
        }
        check("where", t -> Tensor.where(t[2], t[0], t[1]), "a", "b", "condition");
        check("where_bcast_a", t -> Tensor.where(t[2], t[0], t[1]), "a", "b", "condition");
        check("causal_softmax", t -> t[0].maskedFill(t[1].logicalNot(), Double.NEGATIVE_INFINITY).softmax(-1), "s", "mask");
        check("masked_fill", t -> t[0].maskedFill(t[1], 0.25), "x", "mask");
    }

    @Test
    void unary() {
        check("exp", t -> t[0].exp(), "x");
        check("log", t -> t[0].log(), "x");
        check("tanh", t -> t[0].tanh(), "x");
        check("pow2", t -> t[0].pow(2), "x");
        check("pow3", t -> t[0].pow(3.0), "x");
        check("pow_half", t -> t[0].pow(0.5), "x");
        check("pow_1_5", t -> t[0].pow(1.5), "x");
        check("sqrt", t -> t[0].sqrt(), "x");
        check("neg", t -> t[0].neg(), "x");
        check("add_scalar", t -> t[0].add(0.7), "x");
        check("mul_scalar", t -> t[0].mul(-1.3), "x");
        check("div_scalar", t -> t[0].div(8.0), "x");
        check("gelu_tanh", t -> {
            Tensor x = t[0];
            Tensor inner = x.add(x.pow(3.0).mul(0.044715)).mul(0.7978845608028654);
            return x.mul(0.5).mul(inner.tanh().add(1.0));
        }, "x");
    }

    @Test
    void softmaxAndReductions() {
        check("softmax_last", t -> t[0].softmax(-1), "x");
        check("softmax_mid", t -> t[0].softmax(1), "x");
        check("log_softmax_first", t -> t[0].logSoftmax(0), "x");
        check("log_softmax_last", t -> t[0].logSoftmax(-1), "x");
        check("sum_dim", t -> t[0].sum(1, true), "x");
        check("sum_dim_nokeep", t -> t[0].sum(-1, false), "x");
        check("sum_dims", t -> t[0].sum(new int[] {0, 2}, false), "x");
        check("mean_dim", t -> t[0].mean(-1, false), "x");
        check("mean_dims", t -> t[0].mean(new int[] {0, -1}, true), "x");
        check("amax", t -> t[0].amax(1, false), "x");
        check("amax_keep", t -> t[0].amax(0, true), "x");
    }

    @Test
    void maxWithIndices() {
        for (String name : new String[] {"max", "max_keep"}) {
            try (var scope = Tensors.scope()) {
                Tensor x = G.tensor(name + ".x").requiresGrad(true);
                Tensor[] vi = name.equals("max") ? x.max(1, false) : x.max(-2, true);
                assertClose(G.tensor(name + ".values"), vi[0], RTOL, ATOL, name + " values");
                checkExact(name + ".indices", vi[1]);
                vi[0].backward(G.tensor(name + ".gy"));
                assertClose(G.tensor(name + ".gx"), x.grad(), RTOL, ATOL, name + " gradient");
                x.clearGrad();
            }
        }
    }
}
