/**
 * A main class in the default package, as a user's quick script often is: the launcher must
 * start it as a Java worker, not take it for a shell command. Prints its rank and arguments.
 */
public class DefaultPackageWorker {
    public static void main(String[] args) {
        System.out.println("default-package worker rank " + System.getenv("RANK") + " args " + String.join(" ", args));
    }
}
