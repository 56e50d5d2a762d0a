package org.ddp4j.distributed;

/**
 * One rank of {@link StallWarningSettingTest}: creates the default Gloo group and, when it is
 * refused, prints {@code refused: <class>: <message>} and exits 3; exits 0 when it starts.
 */
public final class StallSettingMain {
    private StallSettingMain() {}

    public static void main(String[] args) {
        try {
            Distributed.initProcessGroup("gloo");
        } catch (RuntimeException e) {
            System.out.println("refused: " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(3);
        }
        Distributed.destroyProcessGroup();
    }
}
