package org.ddp4j.optim;

import java.nio.file.Path;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Trains the ConvNet with SGD (momentum and weight decay) on a fixed stream of batches, for the
 * resume tests; also the main class of the fresh JVM that resumes. Usage:
 * {@code ResumeTrainer FROM TO OUT [RESUME]}: restores model and optimizer from RESUME (and
 * RESUME.optim) if given, trains steps [FROM, TO), saves to OUT and OUT.optim.
 */
public final class ResumeTrainer {
    static final int BATCH = 8;

    private ResumeTrainer() {}

    public static void main(String[] args) {
        run(Integer.parseInt(args[0]), Integer.parseInt(args[1]), Path.of(args[2]), args.length > 3 ? Path.of(args[3]) : null, true);
    }

    static SGD optimizer(ConvNet net) {
        return new SGD(net.parameters(), 0.02, 0.9, 0, 1e-3, false);
    }

    /** Trains steps [from, to) after restoring resume (the optimizer too when withOptimizer), then saves. */
    static void run(int from, int to, Path out, Path resume, boolean withOptimizer) {
        try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = optimizer(net)) {
            if (resume != null) {
                try (var scope = Tensors.scope()) {
                    net.loadStateDict(SafeTensors.loadFile(resume));
                    if (withOptimizer) {
                        opt.loadStateDict(OptimizerStateDict.load(optimizerFile(resume)));
                    }
                }
            }
            CrossEntropyLoss ce = new CrossEntropyLoss();
            for (int step = from; step < to; step++) {
                try (var scope = Tensors.scope()) {
                    long[] labels = new long[BATCH];
                    for (int i = 0; i < BATCH; i++) {
                        labels[i] = (step * 3L + i) % 10;
                    }
                    Tensor x = Tensor.of(new Generator(100 + step).uniform(BATCH * 28 * 28, 0f, 1f), BATCH, 1, 28, 28);
                    Tensor loss = ce.forward(net.forward(x), Tensor.ofLongs(labels, BATCH));
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
            }
            SafeTensors.saveFile(net.stateDict(), out);
            opt.stateDict().save(optimizerFile(out));
        }
    }

    static Path optimizerFile(Path model) {
        return model.resolveSibling(model.getFileName() + ".optim");
    }
}
