package org.ddp4j.spark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * One row of an RDD that {@link SparkDistributor#runOnPartitions} trains on: an example's
 * features (float32, flattened row-major; every row of a job has the same count, the product of
 * the job's example shape) and its class label (int64, e.g. 0..9). Serializable, so it travels in
 * RDDs as it is. The record does not copy the array: do not change it after handing it to Spark.
 *
 * @param features the example's values, e.g. the 784 pixels of a 28x28 image in [0, 1]
 * @param label the example's class
 */
public record LabeledExample(float[] features, long label) implements Serializable {
    private static final long serialVersionUID = 1L;

    /** @throws NullPointerException if {@code features} is null */
    public LabeledExample {
        Objects.requireNonNull(features, "features");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LabeledExample e && e.label == label && Arrays.equals(e.features, features);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(features) + Long.hashCode(label);
    }

    @Override
    public String toString() {
        return "LabeledExample[features=float[" + features.length + "], label=" + label + "]";
    }
}
