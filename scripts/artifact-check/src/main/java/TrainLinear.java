import java.util.Arrays;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A user's training main in the default package (the launcher must still take it for a class):
 * a 2->2 Linear under DDP on four fixed samples, batch 1 per rank, MSELoss, SGD lr 0.1, 3 epochs.
 * Each rank prints the parameters after DDP's broadcast and after training, so that
 * scripts/artifact-check.sh can recompute the training with numpy and compare.
 */
public class TrainLinear {
    static final float[][] X = {{0.1f, 0.2f}, {0.3f, -0.1f}, {0.5f, 0.4f}, {-0.2f, 0.3f}};
    static final float[][] Y = {{1f, 0f}, {0f, 1f}, {0.5f, 0.5f}, {1f, 1f}};

    public static void main(String[] args) {
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        DistributedDataParallel model = new DistributedDataParallel(new Linear(2, 2, true, new Generator(rank)));
        Linear linear = (Linear) model.module();
        System.out.println("initial rank=" + rank + " world=" + world + " " + params(linear));
        SGD optimizer = new SGD(model.parameters(), 0.1);
        MSELoss lossFn = new MSELoss();
        DistributedSampler sampler = new DistributedSampler(X.length, world, rank, false, 0, false);
        for (int epoch = 0; epoch < 3; epoch++) {
            sampler.setEpoch(epoch);
            for (int i : sampler.indices()) {
                try (var scope = Tensors.scope()) {
                    optimizer.zeroGrad();
                    Tensor loss = lossFn.forward(model.forward(Tensor.of(X[i], 1, 2)), Tensor.of(Y[i], 1, 2));
                    loss.backward();
                    optimizer.step();
                }
            }
        }
        System.out.println("final rank=" + rank + " world=" + world + " " + params(linear));
        Distributed.destroyProcessGroup();
    }

    static String params(Linear linear) {
        return "weight=" + Arrays.toString(linear.weight().toFloatArray())
                + " bias=" + Arrays.toString(linear.bias().toFloatArray());
    }
}
