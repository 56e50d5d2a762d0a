package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rules of the backward engine ({@link Autograd}, {@link Node}, post-accumulate hooks,
 * {@link Tensors#queueBackwardCallback}). Graphs are built from identity nodes ({@link #tag})
 * that log when their backward runs and what gradient they got, so every test can assert the
 * exact sequence of events, not just the final gradients.
 */
class AutogradTest {
    private final List<String> events = new ArrayList<>();
    private final List<Tensor> leaves = new ArrayList<>();
    private TensorScope scope;

    @BeforeEach
    void openScope() {
        scope = Tensors.scope();
    }

    @AfterEach
    void freeEverything() {
        // Gradients live outside scopes (as parameters' do): free them here so no other test's
        // native-memory count sees them go when the Cleaner runs.
        for (Tensor leaf : leaves) {
            if (leaf.grad() != null) {
                leaf.grad().close();
            }
        }
        scope.close();
    }

    /** A leaf that requires grad (a parameter) whose post-accumulate hook logs "name.grad=[...]". */
    private Tensor leaf(String name, float... values) {
        Tensor t = Tensor.of(values, values.length).requiresGrad(true);
        t.registerPostAccumulateGradHook(p -> events.add(name + ".grad=" + Arrays.toString(p.grad().toFloatArray())));
        leaves.add(t);
        return t;
    }

    /** An identity op whose backward logs "name got [gradient]" and passes the gradient on. */
    private Tensor tag(String name, Tensor input) {
        return new Node(name, input) {
            @Override
            protected Tensor[] backward(Tensor g) {
                events.add(name + " got " + Arrays.toString(g.toFloatArray()));
                return new Tensor[] {g};
            }
        }.attach(input.detach());
    }

    // ---- order -----------------------------------------------------------------------------------

    /**
     * When several nodes are ready, the most recently created runs first (PyTorch's order), not
     * the first input nor depth-first: DDP relies on it for parameters becoming ready in reverse
     * order of use.
     */
    @Test
    void readyNodesRunNewestFirst() {
        Tensor a = leaf("a", 1);
        Tensor b = leaf("b", 1);
        Tensor a2 = tag("A2", tag("A1", a)); // created 1st and 2nd
        Tensor bb = tag("B", b); // created 3rd
        // A2 and B become ready together when the add's backward runs; A2 is the add's first input.
        a2.add(bb).sum().backward();
        assertEquals(List.of("B got [1.0]", "b.grad=[1.0]", "A2 got [1.0]", "A1 got [1.0]", "a.grad=[1.0]"), events);
    }

    /** A node used by several later nodes runs once, after all of them, with the sum of their gradients. */
    @Test
    void aNodeRunsOnceAfterAllItsUsesWithTheSummedGradient() {
        Tensor a = leaf("a", 1, 2);
        Tensor h = tag("H", a);
        Tensor u = tag("U", h);
        Tensor v = tag("V", h);
        u.mul(3f).add(v.mul(4f)).sum().backward(); // d/dh = 3 + 4
        assertEquals(List.of("V got [4.0, 4.0]", "U got [3.0, 3.0]", "H got [7.0, 7.0]", "a.grad=[7.0, 7.0]"), events);
    }

    /**
     * A node that receives no gradient at all (every consumer returned null for it, as a custom
     * Node may) still releases its inputs: the other paths' gradients reach them. Without this,
     * a parameter behind such a node never got its gradient or its hook (so DDP would hang).
     */
    @Test
    void aNodeThatReceivesNoGradientStillReleasesItsInputs() {
        Tensor a = leaf("a", 1);
        Tensor h = tag("H", a);
        Tensor z = tag("Z", h);
        Tensor y = new Node("StopGradient", z) {
            @Override
            protected Tensor[] backward(Tensor g) {
                events.add("StopGradient");
                return new Tensor[] {null};
            }
        }.attach(z.detach());
        y.add(h.mul(2f)).sum().backward(); // only the h.mul(2) path carries gradient: d/da = 2
        assertEquals(List.of("StopGradient", "H got [2.0]", "a.grad=[2.0]"), events);
        assertArrayEquals(new float[] {2}, a.grad().toFloatArray());
    }

    // ---- leaves and their hooks ------------------------------------------------------------------

    /**
     * A leaf's post-accumulate hook fires once per backward, after every use has been summed in
     * (DDP launches a bucket's all-reduce from it); the next backward adds to the gradient and
     * fires it once more.
     */
    @Test
    void leafHookFiresOncePerBackwardWithTheFullGradient() {
        Tensor w = leaf("w", 1, -2, 0.5f);
        // w is used three times: twice in w*w, once in w*3. d/dw sum(w*w + 3w) = 2w + 3.
        w.mul(w).add(w.mul(3f)).sum().backward();
        assertEquals(List.of("w.grad=[5.0, -1.0, 4.0]"), events);

        w.mul(w).add(w.mul(3f)).sum().backward(); // a fresh graph: the gradient accumulates
        assertEquals(List.of("w.grad=[5.0, -1.0, 4.0]", "w.grad=[10.0, -2.0, 8.0]"), events);
    }

    /** Gradients accumulate into leaves only: a non-leaf's grad() stays null, as PyTorch without retain_grad. */
    @Test
    void nonLeafGradientsAreNotKept() {
        Tensor a = leaf("a", 1, 2);
        Tensor h = a.mul(3f);
        assertFalse(h.isLeaf());
        assertTrue(h.requiresGrad());
        h.sum().backward();
        assertNull(h.grad());
        assertArrayEquals(new float[] {3, 3}, a.grad().toFloatArray());
    }

    /** detach() cuts the graph: d/da sum(a * detach(a)) = a, not 2a. */
    @Test
    void noGradientFlowsThroughDetach() {
        Tensor a = leaf("a", 1, -2, 0.5f);
        Tensor d = a.detach();
        assertTrue(d.isLeaf());
        assertFalse(d.requiresGrad());
        a.mul(d).sum().backward();
        assertArrayEquals(new float[] {1, -2, 0.5f}, a.grad().toFloatArray());
    }

    /** An explicit output gradient weights the result: d/da <g, 3a> = 3g. */
    @Test
    void backwardWithAnOutputGradientOfTheSameShape() {
        Tensor a = leaf("a", 1, 1, 1);
        a.mul(3f).backward(Tensor.of(new float[] {1, 2, -4}, 3));
        assertArrayEquals(new float[] {3, 6, -12}, a.grad().toFloatArray());
    }

    /**
     * backward() does not free the graph: a second backward through the same graph adds the same
     * gradient again. (PyTorch instead raises unless retain_graph=True.)
     */
    @Test
    void theGraphCanBeBackedThroughTwice() {
        Tensor a = leaf("a", 2);
        Tensor loss = a.mul(a).sum();
        loss.backward();
        loss.backward();
        assertEquals(List.of("a.grad=[4.0]", "a.grad=[8.0]"), events);
    }

    // ---- when a graph is recorded ----------------------------------------------------------------

    /** Ops on tensors that do not require grad record nothing; requiresGrad is only for leaves. */
    @Test
    void onlyOpsOnTensorsThatRequireGradRecordAGraph() {
        Tensor x = Tensor.of(new float[] {1, 2}, 2);
        Tensor y = x.mul(2f);
        assertTrue(y.isLeaf());
        assertNull(y.gradFn());
        assertFalse(y.requiresGrad());

        Tensor a = leaf("a", 1, 2);
        Tensor z = a.mul(x);
        assertEquals("MulBackward", z.gradFn().name());
        var e = assertThrows(IllegalStateException.class, () -> z.requiresGrad(false));
        assertTrue(e.getMessage().contains("MulBackward") && e.getMessage().contains("detach()"), e.getMessage());
    }

    /** Under noGrad no graph is recorded, so backward has nothing to do and says why; the mode nests and restores. */
    @Test
    void noGradRecordsNoGraph() {
        Tensor a = leaf("a", 1, 2);
        Tensor y;
        try (var outer = Tensors.noGrad()) {
            assertFalse(Tensors.isGradEnabled());
            try (var inner = Tensors.noGrad()) {
                assertFalse(Tensors.isGradEnabled());
            }
            assertFalse(Tensors.isGradEnabled(), "closing an inner noGrad must not re-enable grad mode");
            y = a.mul(2f).sum();
        }
        assertTrue(Tensors.isGradEnabled());
        assertTrue(y.isLeaf());
        assertFalse(y.requiresGrad());
        var e = assertThrows(IllegalStateException.class, y::backward);
        assertTrue(e.getMessage().contains("does not require grad") && e.getMessage().contains("noGrad"), e.getMessage());
        assertNull(a.grad());
    }

    /** Grad mode is per thread: one rank's noGrad (e.g. evaluation) does not switch off another's graph. */
    @Test
    void gradModeIsPerThread() throws Exception {
        AtomicBoolean otherThread = new AtomicBoolean();
        try (var off = Tensors.noGrad()) {
            Thread t = new Thread(() -> otherThread.set(Tensors.isGradEnabled()));
            t.start();
            t.join(10_000);
            assertFalse(t.isAlive(), "the probe thread hung");
        }
        assertTrue(otherThread.get());
    }

    /** backward() without an output gradient needs a scalar, and the error names the shape. */
    @Test
    void backwardOnANonScalarNeedsAGradient() {
        Tensor a = leaf("a", 1, 2, 3);
        var e = assertThrows(IllegalStateException.class, () -> a.mul(2f).backward());
        assertTrue(e.getMessage().contains("scalar") && e.getMessage().contains("[3]"), e.getMessage());
        assertNull(a.grad());
    }

    // ---- callbacks -------------------------------------------------------------------------------

    /**
     * A callback queued during backward (here from a hook) runs once, when every gradient has been
     * accumulated and every hook has fired, before backward() returns; it is not run again by the
     * next backward.
     */
    @Test
    void queuedCallbackRunsOnceAfterEveryHook() {
        Tensor a = leaf("a", 1);
        Tensor b = leaf("b", 1);
        AtomicBoolean queued = new AtomicBoolean();
        // b's branch is newer, so b's hook fires first, before a has its gradient.
        b.registerPostAccumulateGradHook(p -> {
            if (!queued.getAndSet(true)) {
                Tensors.queueBackwardCallback(() -> events.add("callback sees a.grad="
                        + Arrays.toString(a.grad().toFloatArray()) + " b.grad=" + Arrays.toString(b.grad().toFloatArray())));
            }
        });
        a.mul(2f).add(b.mul(3f)).sum().backward();
        assertEquals(List.of("b.grad=[3.0]", "a.grad=[2.0]", "callback sees a.grad=[2.0] b.grad=[3.0]"), events);

        events.clear();
        a.mul(2f).add(b.mul(3f)).sum().backward();
        assertEquals(List.of("b.grad=[6.0]", "a.grad=[4.0]"), events);
    }

    /** Callbacks run in the order queued (from nodes, hooks or other callbacks), all in the same backward. */
    @Test
    void callbacksRunInQueueOrderAndMayQueueMore() {
        Tensor a = leaf("a", 1);
        a.registerPostAccumulateGradHook(p -> Tensors.queueBackwardCallback(() -> events.add("second")));
        Tensor t = new Node("Queueing", a) {
            @Override
            protected Tensor[] backward(Tensor g) {
                events.add("Queueing");
                Tensors.queueBackwardCallback(() -> {
                    events.add("first");
                    Tensors.queueBackwardCallback(() -> events.add("third"));
                });
                return new Tensor[] {g};
            }
        }.attach(a.detach());
        t.sum().backward();
        assertEquals(List.of("Queueing", "a.grad=[1.0]", "first", "second", "third"), events);
    }

    /** Outside backward there is nothing to attach a callback to: it is refused, not silently dropped. */
    @Test
    void queueingOutsideBackwardIsRefused() {
        var e = assertThrows(IllegalStateException.class, () -> Tensors.queueBackwardCallback(() -> events.add("ran")));
        assertTrue(e.getMessage().contains("during backward()"), e.getMessage());
        Tensor a = leaf("a", 1);
        a.mul(1f).sum().backward();
        assertEquals(List.of("a.grad=[1.0]"), events);
        assertNotNull(a.grad());
    }
}
