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
        Map<Node, Integer> dependencies = countDependencies(root.gradFn());
        Map<Node, Tensor> pending = new IdentityHashMap<>();
        PriorityQueue<Node> ready = new PriorityQueue<>(Comparator.comparingLong((Node n) -> n.sequenceNumber).reversed());
        pending.put(root.gradFn(), rootGrad);
        ready.add(root.gradFn());
        try (var ignored = Tensors.noGrad()) {
            while (!ready.isEmpty()) {
                Node node = ready.poll();
                Tensor gradOutput = pending.remove(node);
                Tensor[] grads = node.backward(gradOutput);
                for (int i = 0; i < node.inputCount(); i++) {
                    Tensor input = node.input(i);
                    if (input == null || !input.requiresGrad()) {
                        continue;
                    }
                    Tensor g = i < grads.length ? grads[i] : null;
                    Node producer = input.gradFn();
                    if (producer == null) {
                        if (g != null) {
                            input.accumulateGrad(g);
                        }
                        continue;
                    }
                    if (g != null) {
                        Tensor previous = pending.get(producer);
                        pending.put(producer, previous == null ? g : previous.add(g));
                    }
                    int left = dependencies.merge(producer, -1, Integer::sum);
                    if (left == 0 && pending.containsKey(producer)) {
                        ready.add(producer);
                    }
                }
            }
        }
    }

    /** For each node reachable from root: how many edges lead into it. */
    private static Map<Node, Integer> countDependencies(Node root) {
        Map<Node, Integer> counts = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        counts.put(root, 0);
        stack.push(root);
        while (!stack.isEmpty()) {
            Node node = stack.pop();
            for (int i = 0; i < node.inputCount(); i++) {
                Tensor input = node.input(i);
                if (input == null || !input.requiresGrad() || input.gradFn() == null) {
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
