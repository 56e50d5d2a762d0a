package org.ddp4j.launch;

import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.environment.LaunchEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * picocli's side of {@link LaunchEnvironment}: the launcher's option defaults from the cluster
 * (Kubeflow's PET_* variables, then a SLURM job step), for options not given on the command line;
 * a malformed value becomes a usage error naming the variable and the option that overrides it.
 */
final class ClusterLaunchDefaults implements CommandLine.IDefaultValueProvider {
    private final LaunchEnvironment cluster;

    ClusterLaunchDefaults(Map<String, String> env) {
        this.cluster = new LaunchEnvironment(env);
    }

    @Override
    public String defaultValue(ArgSpec arg) {
        if (!(arg instanceof OptionSpec)) {
            return null;
        }
        OptionSpec option = (OptionSpec) arg;
        try {
            return cluster.defaultValue(option.names()[0]);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new ParameterException(option.command().commandLine(), e.getMessage());
        }
    }

    /** What came from the cluster, e.g. {@code "--nnodes 2 (SLURM_NNODES)"}; empty when nothing did. */
    List<String> used() {
        return cluster.used();
    }
}
