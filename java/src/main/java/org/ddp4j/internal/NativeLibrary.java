package org.ddp4j.internal;

import java.io.File;
import java.io.IOException;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.scijava.nativelib.NativeLoader;

/**
 * Loads libddp4j.so once per JVM. The library travels in the jar under {@code natives/linux-x86_64/}, a
 * folder that is no Java package name, so the module does not hide it from the class loader on the
 * module path; native-lib-loader extracts it, and we call {@link System#load}
 * ourselves so that a missing system library is reported by name, with the Debian package that
 * provides it, instead of native-lib-loader's generic "not in java.library.path".
 */
public final class NativeLibrary {
    /** System libraries libddp4j links against, and the Debian package that installs each. */
    private static final Map<String, String> PACKAGES = Map.of(
            "libgloo", "libgloo0 (development files: libgloo-dev)",
            "libopenblas", "libopenblas0",
            "libblas", "libopenblas0",
            "libgfortran", "libgfortran5");
    private static final Pattern MISSING = Pattern.compile("(lib[\\w.+-]+?\\.so[\\w.]*): cannot open shared object file");

    private static volatile boolean loaded;
    private static volatile boolean cudaLoaded;
    /** libddp4j_cuda.so extracted next to libddp4j.so at start-up (null: not in this jar). */
    private static File cudaFile;

    private NativeLibrary() {}

    /**
     * Loads libddp4j if it is not loaded yet.
     *
     * @throws UnsatisfiedLinkError naming the missing system library and the apt package to install,
     *     or saying the jar was built without its native library
     */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (loaded) {
                return;
            }
            File file = extract("ddp4j");
            try {
                System.load(file.getAbsolutePath());
            } catch (UnsatisfiedLinkError e) {
                throw explain(e);
            }
            // Before any other native call: the library reads these values, not the environment.
            NativeSettings.handDown(System.getenv());
            // Extract the CUDA library now, loading it only on first CUDA use: native-lib-loader
            // deletes extraction folders older than five minutes when another JVM starts, so a
            // late extraction could find its folder gone.
            cudaFile = extractOptional("ddp4j_cuda");
            loaded = true;
        }
    }

    /**
     * Loads libddp4j_cuda.so (after libddp4j.so) if it is not loaded yet. Loading needs no GPU:
     * the CUDA runtime is linked in statically, and a missing driver shows up at the first device query.
     *
     * @throws IllegalStateException if this jar was built without the CUDA library
     * @throws UnsatisfiedLinkError if the library is there but cannot be loaded (message from the loader)
     */
    public static void loadCuda() {
        load();
        if (cudaLoaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (cudaLoaded) {
                return;
            }
            if (cudaFile == null || !cudaFile.isFile()) {
                throw new IllegalStateException("this ddp4j build has no CUDA support: libddp4j_cuda.so is not in "
                        + (Setting.LIBRARY_PATH.raw(System.getenv()) != null ? "DDP4J_LIBRARY_PATH ("
                        + Setting.LIBRARY_PATH.raw(System.getenv()) + ")" : "the jar") + " (nvcc was not found when it was "
                        + "built); rebuild on a machine with the CUDA toolkit, or use device cpu");
            }
            System.load(cudaFile.getAbsolutePath());
            cudaLoaded = true;
        }
    }

    private static File extractOptional(String name) {
        String override = Setting.LIBRARY_PATH.raw(System.getenv());
        if (override != null && !override.isEmpty()) {
            return new File(override, "lib" + name + ".so");
        }
        if (NativeLibrary.class.getClassLoader().getResource("natives/linux-x86_64/lib" + name + ".so") == null) {
            return null;
        }
        return extract(name);
    }

    private static File extract(String name) {
        String override = Setting.LIBRARY_PATH.raw(System.getenv());
        if (override != null && !override.isEmpty()) {
            return new File(override, "lib" + name + ".so");
        }
        try {
            File file = NativeLoader.getJniExtractor().extractJni("natives/linux-x86_64", name);
            if (file == null) {
                throw new UnsatisfiedLinkError("lib" + name + ".so is not in the ddp4j jar (natives/linux-x86_64/): "
                        + "the jar was built without its native library; build it with `mvn package` "
                        + "on a machine with cmake, libgloo-dev and libopenblas-dev (scripts/setup.sh)");
            }
            return file;
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract lib" + name + ".so from the ddp4j jar: "
                    + e.getMessage());
            error.initCause(e);
            throw error;
        }
    }

    static UnsatisfiedLinkError explain(UnsatisfiedLinkError e) {
        String message = String.valueOf(e.getMessage());
        Matcher m = MISSING.matcher(message);
        if (m.find()) {
            String lib = m.group(1);
            String pkg = PACKAGES.entrySet().stream()
                    .filter(entry -> lib.startsWith(entry.getKey()))
                    .map(Map.Entry::getValue)
                    .findFirst()
                    .orElse("the package that provides it (apt-file search " + lib + ")");
            UnsatisfiedLinkError better = new UnsatisfiedLinkError("ddp4j's native library needs " + lib
                    + ", which is not installed: install " + pkg + " (as root: apt-get install -y "
                    + pkg.split(" ")[0] + ", or run scripts/setup.sh). Loader said: " + message);
            better.initCause(e);
            return better;
        }
        return e;
    }
}
