package org.ddp4j.distributed;

import java.util.Map;

/**
 * The old home of {@link org.ddp4j.distributed.environment.ClusterEnvironment}, kept so that code
 * importing {@code org.ddp4j.distributed.ClusterEnvironment} still compiles.
 *
 * @deprecated the cluster's variables are read in {@code org.ddp4j.distributed.environment}:
 *     import {@code org.ddp4j.distributed.environment.ClusterEnvironment}
 */
@Deprecated
public final class ClusterEnvironment {
    private ClusterEnvironment() {}

    /** @deprecated see the class comment */
    @Deprecated
    public static Map<String, String> resolve(Map<String, String> env) {
        return org.ddp4j.distributed.environment.ClusterEnvironment.resolve(env);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static String missingHint(Map<String, String> env) {
        return org.ddp4j.distributed.environment.ClusterEnvironment.missingHint(env);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static String origin(Map<String, String> processEnv, String name) {
        return org.ddp4j.distributed.environment.ClusterEnvironment.origin(processEnv, name);
    }
}
