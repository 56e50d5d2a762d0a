package org.ddp4j.nn;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * Holds child modules in a list, naming them "0", "1", ... so their parameters are registered
 * ({@code h.0.attn.c_attn.weight}). Mirrors {@code torch.nn.ModuleList}; like it, it has no forward
 * of its own: iterate over it.
 *
 * @param <M> the children's type
 */
public class ModuleList<M extends Module> extends Module implements Iterable<M> {
    private final List<M> modules = new ArrayList<>();

    /** An empty list. */
    public ModuleList() {}

    /** A list holding modules in order. */
    @SafeVarargs
    public ModuleList(M... modules) {
        for (M m : modules) {
            add(m);
        }
    }

    /** A list holding modules in order. */
    public ModuleList(Iterable<? extends M> modules) {
        for (M m : modules) {
            add(m);
        }
    }

    /** Appends module under the name of its index. Returns this. Mirrors {@code ModuleList.append}. */
    public ModuleList<M> add(M module) {
        registerModule(Integer.toString(modules.size()), module);
        modules.add(module);
        return this;
    }

    /**
     * The module at index i; negative i counts from the end, as Python's indexing.
     *
     * @throws IndexOutOfBoundsException outside [-size, size)
     */
    public M get(int i) {
        int n = modules.size();
        if (i < -n || i >= n) {
            throw new IndexOutOfBoundsException("ModuleList index " + i + " is out of range for " + n + " modules");
        }
        return modules.get(i < 0 ? i + n : i);
    }

    /** The number of modules. Mirrors {@code len(module_list)}. */
    public int size() {
        return modules.size();
    }

    /** The modules in order (not removable). */
    @Override
    public Iterator<M> iterator() {
        return Collections.unmodifiableList(modules).iterator();
    }

    /**
     * Not callable, as PyTorch's ModuleList.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException("ModuleList has no forward: iterate over its modules and call each");
    }
}
