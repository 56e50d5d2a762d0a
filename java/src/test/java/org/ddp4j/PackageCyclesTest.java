package org.ddp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The library's packages form no cycle: each depends only on packages below it (tensor, then nn and
 * optim, then distributed, then DDP and the launcher). A new arrow that closes a loop fails here, naming
 * the classes that make it.
 *
 * <p>Two things do not count: packages that form one unit by design ({@link #FAMILIES}), and whatever
 * is {@code @Deprecated}. A deprecated alias keeps an old name working from its old package and
 * points up to the new home; it goes when the alias goes.
 */
class PackageCyclesTest {
    /** Packages that count as one: they call each other by design. */
    static final Map<String, String> FAMILIES = Map.of(
            // the JNI layer under everything; TensorHandles reaches back into Tensor's package-private handle
            "org.ddp4j.internal", "org.ddp4j.tensor",
            // the stores and the rendezvous throw distributed's exceptions; distributed builds its groups on them
            "org.ddp4j.distributed.store", "org.ddp4j.distributed",
            "org.ddp4j.distributed.rendezvous", "org.ddp4j.distributed",
            // spawn records distributed's error files and dump signal; Distributed mirrors spawn
            "org.ddp4j.multiprocessing", "org.ddp4j.distributed");

    @Test
    void theLibrarysPackagesFormNoCycle() {
        Iterable<JavaClass> classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
                .importPackages("org.ddp4j");
        Map<String, Map<String, Set<String>>> graph = packageGraph(classes);
        assertTrue(graph.getOrDefault("org.ddp4j.nn", Map.of()).containsKey("org.ddp4j.tensor"),
                "the import found the library's classes: nn depends on tensor");
        assertEquals(List.of(), cycles(graph),
                "packages in a cycle (with the classes that make each arrow); break the arrow that points down-up");
    }

    @Test
    void aLoopOfThreePackagesIsReportedWithItsArrows() {
        Map<String, Map<String, Set<String>>> graph = new TreeMap<>();
        arrow(graph, "a", "b", "A1 -> B1");
        arrow(graph, "b", "c", "B1 -> C1");
        arrow(graph, "c", "a", "C1 -> A2");
        arrow(graph, "c", "d", "C1 -> D1");
        assertEquals(List.of("[a, b, c]: a -> b [A1 -> B1]; b -> c [B1 -> C1]; c -> a [C1 -> A2]"), cycles(graph));
        graph.get("c").remove("a");
        assertEquals(List.of(), cycles(graph));
    }

    /** Package (or family) to the packages it depends on, with the class-level arrows behind each. */
    static Map<String, Map<String, Set<String>>> packageGraph(Iterable<JavaClass> classes) {
        Map<String, Map<String, Set<String>>> graph = new TreeMap<>();
        for (JavaClass origin : classes) {
            if (deprecated(origin)) {
                continue;
            }
            Set<String> deprecatedMembers = origin.getMembers().stream()
                    .filter(m -> m.isAnnotatedWith(Deprecated.class))
                    .map(JavaMember::getFullName)
                    .collect(Collectors.toSet());
            for (Dependency d : origin.getDirectDependenciesFromSelf()) {
                JavaClass target = d.getTargetClass().getBaseComponentType();
                if (!target.getPackageName().startsWith("org.ddp4j") || fromMember(d, deprecatedMembers)) {
                    continue;
                }
                String from = slice(origin.getPackageName());
                String to = slice(target.getPackageName());
                if (!from.equals(to)) {
                    arrow(graph, from, to, topLevel(origin).getSimpleName() + " -> " + topLevel(target).getSimpleName());
                }
            }
        }
        return graph;
    }

    private static void arrow(Map<String, Map<String, Set<String>>> graph, String from, String to, String why) {
        graph.computeIfAbsent(from, k -> new TreeMap<>()).computeIfAbsent(to, k -> new TreeSet<>()).add(why);
    }

    static String slice(String packageName) {
        return FAMILIES.getOrDefault(packageName, packageName);
    }

    private static boolean deprecated(JavaClass c) {
        for (Optional<JavaClass> k = Optional.of(c); k.isPresent(); k = k.get().getEnclosingClass()) {
            if (k.get().isAnnotatedWith(Deprecated.class)) {
                return true;
            }
        }
        return false;
    }

    private static JavaClass topLevel(JavaClass c) {
        JavaClass k = c;
        while (k.getEnclosingClass().isPresent()) {
            k = k.getEnclosingClass().get();
        }
        return k;
    }

    /** Whether ArchUnit's description names one of {@code members} as the origin: "Method <full name> calls ...". */
    private static boolean fromMember(Dependency d, Set<String> members) {
        String text = d.getDescription();
        int open = text.indexOf('<');
        int close = text.indexOf('>', open + 1);
        return open >= 0 && close > open && members.contains(text.substring(open + 1, close));
    }

    /** Each strongly connected set of two or more packages, with the arrows inside it (Tarjan's algorithm). */
    static List<String> cycles(Map<String, Map<String, Set<String>>> graph) {
        Tarjan t = new Tarjan(graph);
        for (String v : graph.keySet()) {
            if (!t.index.containsKey(v)) {
                t.visit(v);
            }
        }
        List<String> out = new ArrayList<>();
        for (Set<String> component : t.components) {
            StringBuilder b = new StringBuilder(component.toString()).append(':');
            String sep = " ";
            for (String from : component) {
                for (Map.Entry<String, Set<String>> e : graph.getOrDefault(from, Map.of()).entrySet()) {
                    if (component.contains(e.getKey())) {
                        b.append(sep).append(from).append(" -> ").append(e.getKey()).append(' ').append(e.getValue());
                        sep = "; ";
                    }
                }
            }
            out.add(b.toString());
        }
        return out;
    }

    private static final class Tarjan {
        final Map<String, Map<String, Set<String>>> graph;
        final Map<String, Integer> index = new HashMap<>();
        final Map<String, Integer> low = new HashMap<>();
        final List<String> stack = new ArrayList<>();
        final List<Set<String>> components = new ArrayList<>();

        Tarjan(Map<String, Map<String, Set<String>>> graph) {
            this.graph = graph;
        }

        void visit(String v) {
            index.put(v, index.size());
            low.put(v, index.get(v));
            stack.add(v);
            for (String w : graph.getOrDefault(v, Map.of()).keySet()) {
                if (!index.containsKey(w)) {
                    visit(w);
                    low.put(v, Math.min(low.get(v), low.get(w)));
                } else if (stack.contains(w)) {
                    low.put(v, Math.min(low.get(v), index.get(w)));
                }
            }
            if (low.get(v).equals(index.get(v))) {
                Set<String> component = new TreeSet<>();
                String w;
                do {
                    w = stack.remove(stack.size() - 1);
                    component.add(w);
                } while (!w.equals(v));
                if (component.size() > 1) {
                    components.add(component);
                }
            }
        }
    }
}
