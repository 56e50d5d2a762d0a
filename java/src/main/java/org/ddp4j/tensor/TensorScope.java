package org.ddp4j.tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * Frees every tensor created on this thread while it is open (unless {@link Tensor#keep() kept}),
 * when it closes. Scopes nest. Create one per training step with {@link Tensors#scope()}.
 */
public final class TensorScope implements AutoCloseable {
    private static final ThreadLocal<TensorScope> CURRENT = new ThreadLocal<>();

    private final TensorScope parent;
    private final List<Tensor> tensors = new ArrayList<>();
    private boolean closed;

    TensorScope() {
        this.parent = CURRENT.get();
        CURRENT.set(this);
    }

    static TensorScope current() {
        return CURRENT.get();
    }

    void register(Tensor t) {
        t.scope = this;
        tensors.add(t);
    }

    /** Number of tensors this scope will free. */
    public int size() {
        return tensors.size();
    }

    /** Frees the scope's tensors (newest first) and makes the enclosing scope current again. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int i = tensors.size() - 1; i >= 0; i--) {
            Tensor t = tensors.get(i);
            if (t.scope == this) {
                t.close();
            }
        }
        tensors.clear();
        if (CURRENT.get() == this) {
            CURRENT.set(parent);
        }
    }
}
