package org.ddp4j.tensor;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * The backward engine: walks the graph from a root in dependency order (newest ready node first,
 * like PyTorch's engine, so parameter gradients become ready in reverse order of use) and
 * accumulates gradients into leaves. Mirrors {@code torch.autograd.backward}.
 */
final class Autograd {
    private static final ThreadLocal<List<Runnable>> CALLBACKS = new ThreadLocal<>();

    private Autograd() {}

    /** Queues a callback to run when the backward pass in progress on this thread finishes. */
    static void queueCallback(Runnable callback) {
        List<Runnable> callbacks = CALLBACKS.get();
        if (callbacks == null) {
            throw new IllegalStateException("queueBackwardCallback() may only be called during backward()");
        }
        callbacks.add(callback);
    }

    /**
     * Runs backward from root. The engine frees every gradient it no longer needs as soon as it can
     * (as PyTorch's engine drops its references to a node's input buffer after the node ran): the
     * gradients nodes return, once the producer they were meant for has consumed them, and the
     * sums it makes. rootGrad is freed too when {@code ownsRootGrad} (Tensor.backward() made it);
     * a gradient the caller passed in is left alone.
     */
    static void backward(Tensor root, Tensor rootGrad, boolean ownsRootGrad) {
        List<Runnable> outer = CALLBACKS.get();
        List<Runnable> callbacks = new ArrayList<>();
        CALLBACKS.set(callbacks);
        try {
            new Run(ownsRootGrad ? null : rootGrad).run(root, rootGrad);
            // Callbacks may queue more callbacks (e.g. DDP finishing its buckets).
            for (int i = 0; i < callbacks.size(); i++) {
                callbacks.get(i).run();
            }
        } finally {
            CALLBACKS.set(outer);
        }
    }

    /** One backward pass: its pending gradients and how many of its slots hold each. */
    private static final class Run {
        /** The caller's gradient, which the engine must not free (null when the engine owns the root's). */
        private final Tensor callersGrad;
        /** Pending gradients (of nodes and of leaves) → how many pending slots hold that tensor. */
        private final Map<Tensor, Integer> held = new IdentityHashMap<>();
        private final Map<Tensor, Integer> leafUses = new IdentityHashMap<>();
        private final Map<Tensor, Tensor> pendingLeaf = new IdentityHashMap<>();
        private final Map<Node, Tensor> pending = new IdentityHashMap<>();

        Run(Tensor callersGrad) {
            this.callersGrad = callersGrad;
        }

        void run(Tensor root, Tensor rootGrad) {
            if (!root.requiresGrad()) {
                throw new IllegalStateException("backward(): the tensor does not require grad (no parameter with "
                        + "requiresGrad(true) contributed to it, or it was computed under Tensors.noGrad())");
            }
            if (root.isLeaf()) {
                root.accumulateGrad(rootGrad);
                release(rootGrad);
                return;
            }
            Map<Node, Integer> dependencies = countDependencies(root.gradFn(), leafUses);
            PriorityQueue<Node> ready = new PriorityQueue<>(
                    Comparator.comparingLong((Node n) -> n.sequenceNumber).reversed());
            hold(rootGrad);
            pending.put(root.gradFn(), rootGrad);
            ready.add(root.gradFn());
            try (var ignored = Tensors.noGrad()) {
                while (!ready.isEmpty()) {
                    Node node = ready.poll();
                    Tensor gradOutput = pending.remove(node);
                    // A node no consumer gave a gradient to computes nothing, but still releases its
                    // inputs: other paths may have delivered theirs (PyTorch runs it with undefined grads).
                    Tensor[] grads = gradOutput == null ? new Tensor[0] : node.backward(gradOutput);
                    for (int i = 0; i < node.inputCount(); i++) {
                        Tensor input = node.input(i);
                        Tensor g = i < grads.length ? grads[i] : null;
                        if (input == null || !input.requiresGrad()) {
                            continue;
                        }
                        Node producer = input.gradFn();
                        if (producer == null) {
                            accumulateLeaf(input, g);
                            continue;
                        }
                        if (g != null) {
                            Tensor previous = pending.get(producer);
                            Tensor sum = previous == null ? g : previous.add(g);
                            hold(sum);
                            pending.put(producer, sum);
                            if (previous != null) {
                                unhold(previous);
                                release(previous);
                            }
                        }
                        int left = dependencies.merge(producer, -1, Integer::sum);
                        if (left == 0) {
                            ready.add(producer);
                        }
                    }
                    // This node's gradient and whatever it returned that no slot took (gradients of
                    // inputs that need none, and ones already summed in) are done with.
                    if (gradOutput != null) {
                        unhold(gradOutput);
                        release(gradOutput);
                    }
                    for (Tensor g : grads) {
                        release(g);
                    }
                }
            }
        }

        /**
         * Accumulates into a leaf once per backward, after all its uses have delivered their gradient
         * (as PyTorch's AccumulateGrad), so post-accumulate hooks fire once: DDP launches a bucket's
         * all-reduce from that hook, which must not happen before a shared parameter's last use.
         */
        private void accumulateLeaf(Tensor leaf, Tensor g) {
            int left = leafUses.merge(leaf, -1, Integer::sum);
            Tensor previous = pendingLeaf.remove(leaf);
            Tensor sum = previous;
            if (g != null) {
                sum = previous == null ? g : previous.add(g);
            }
            if (sum != null) {
                hold(sum);
            }
            if (previous != null) {
                unhold(previous);
                if (previous != sum) {
                    release(previous);
                }
            }
            if (left > 0) {
                if (sum != null) {
                    pendingLeaf.put(leaf, sum);
                }
                return;
            }
            if (sum != null) {
                leaf.accumulateGrad(sum); // copies or adds: the sum itself is not kept
                unhold(sum);
                release(sum);
            }
        }

        private void hold(Tensor t) {
            held.merge(t, 1, Integer::sum);
        }

        private void unhold(Tensor t) {
            held.merge(t, -1, (a, b) -> a + b == 0 ? null : a + b);
        }

        /** Frees t unless a pending slot still holds it or it is the caller's (or null). */
        private void release(Tensor t) {
            if (t != null && t != callersGrad && !held.containsKey(t)) {
                t.close();
            }
        }
    }

    /** For each node reachable from root: how many edges lead into it; leafUses likewise for leaves. */
    private static Map<Node, Integer> countDependencies(Node root, Map<Tensor, Integer> leafUses) {
        Map<Node, Integer> counts = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        counts.put(root, 0);
        stack.push(root);
        while (!stack.isEmpty()) {
            Node node = stack.pop();
            for (int i = 0; i < node.inputCount(); i++) {
                Tensor input = node.input(i);
                if (input == null || !input.requiresGrad()) {
                    continue;
                }
                if (input.gradFn() == null) {
                    leafUses.merge(input, 1, Integer::sum);
                    continue;
                }
                Node producer = input.gradFn();
                Integer seen = counts.get(producer);
                counts.put(producer, seen == null ? 1 : seen + 1);
                if (seen == null) {
                    stack.push(producer);
                }
            }
        }
        return counts;
    }
}
