package org.ddp4j.internal;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code -V} / {@code --version} of every ddp4j command (the launcher, the demos, the benchmark
 * and report mains): the command's name, the ddp4j jar's version (its manifest's
 * Implementation-Version, or "(development build)" when run from classes) and the Java version.
 */
public final class VersionProvider implements CommandLine.IVersionProvider {
    @Spec
    CommandSpec spec;

    @Override
    public String[] getVersion() {
        String v = VersionProvider.class.getPackage().getImplementationVersion();
        return new String[] {spec.name() + " " + (v == null ? "(development build)" : v) + ", java "
                + System.getProperty("java.version")};
    }
}
