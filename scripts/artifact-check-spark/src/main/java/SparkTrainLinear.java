import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.ddp4j.spark.SparkDistributor;
import org.ddp4j.spark.WorkerResult;

/**
 * A user's Spark driver: runs TrainLinear (the app's own DDP main) as 2 ranks in a barrier stage
 * of Spark's local[2] master, as docs/launching.md's first example does, and prints each rank's
 * last lines, which scripts/artifact-check.sh checks against numpy.
 */
public class SparkTrainLinear {
    public static void main(String[] args) {
        SparkContext sc = new SparkContext(new SparkConf().setMaster("local[2]").setAppName("ddp4j artifact check")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.ui.enabled", "false"));
        try {
            List<WorkerResult> ranks = new SparkDistributor(2).sparkContext(sc).run("TrainLinear");
            for (WorkerResult r : ranks) {
                for (String line : r.lastLines()) {
                    System.out.println("result rank " + r.rank() + ": " + line);
                }
            }
        } finally {
            sc.stop();
        }
    }
}
