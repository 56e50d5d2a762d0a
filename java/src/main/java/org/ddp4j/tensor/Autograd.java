package org.ddp4j.tensor;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
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

    static void backward(Tensor root, Tensor rootGrad) {
        List<Runnable> outer = CALLBACKS.get();
        List<Runnable> callbacks = new ArrayList<>();
        CALLBACKS.set(callbacks);
        try {
            run(root, rootGrad);
            // Callbacks may queue more callbacks (e.g. DDP finishing its buckets).
            for (int i = 0; i < callbacks.size(); i++) {
                callbacks.get(i).run();
            }
        } finally {
            CALLBACKS.set(outer);
        }
    }

    private static void run(Tensor root, Tensor rootGrad) {
        if (!root.requiresGrad()) {
            throw new IllegalStateException("backward(): the tensor does not require grad (no parameter with "
                    + "requiresGrad(true) contributed to it, or it was computed under Tensors.noGrad())");
        }
        if (root.isLeaf()) {
            root.accumulateGrad(rootGrad);
            return;
        }
        Map<Tensor, Integer> leafUses = new IdentityHashMap<>();
        Map<Node, Integer> dependencies = countDependencies(root.gradFn(), leafUses);
        Map<Tensor, Tensor> pendingLeaf = new LinkedHashMap<>(); // Tensor keeps identity equals
        Map<Node, Tensor> pending = new IdentityHashMap<>();
        PriorityQueue<Node> ready = new PriorityQueue<>(Comparator.comparingLong((Node n) -> n.sequenceNumber).reversed());
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
                    if (input == null || !input.requiresGrad()) {
                        continue;
                    }
                    Tensor g = i < grads.length ? grads[i] : null;
                    Node producer = input.gradFn();
                    if (producer == null) {
                        accumulateLeaf(input, g, leafUses, pendingLeaf);
                        continue;
                    }
                    if (g != null) {
                        Tensor previous = pending.get(producer);
                        pending.put(producer, previous == null ? g : previous.add(g));
                    }
                    int left = dependencies.merge(producer, -1, Integer::sum);
                    if (left == 0) {
                        ready.add(producer);
                    }
                }
            }
        }
    }

    /**
     * Accumulates into a leaf once per backward, after all its uses have delivered their gradient
     * (as PyTorch's AccumulateGrad), so post-accumulate hooks fire once: DDP launches a bucket's
     * all-reduce from that hook, which must not happen before a shared parameter's last use.
     */
    private static void accumulateLeaf(Tensor leaf, Tensor g, Map<Tensor, Integer> leafUses,
            Map<Tensor, Tensor> pendingLeaf) {
        int left = leafUses.merge(leaf, -1, Integer::sum);
        Tensor sum = pendingLeaf.get(leaf);
        if (g != null) {
            sum = sum == null ? g : sum.add(g);
        }
        if (left > 0) {
            if (sum != null) {
                pendingLeaf.put(leaf, sum);
            }
            return;
        }
        pendingLeaf.remove(leaf);
        if (sum != null) {
            leaf.accumulateGrad(sum);
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
