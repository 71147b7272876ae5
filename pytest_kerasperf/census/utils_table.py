"""The census's workloads of ``keras.utils`` (with ``keras.utils.bounding_boxes`` and
``keras.utils.legacy``): one per public name, each a call as a user makes it (``utils``).

``UTILS``: public name -> what is measured.  The files a workload reads or writes are made in
the test's ``tmp_path``, its working directory, and named relative to it: Keras parses a path
component by component, and the depth of ``tmp_path`` is pytest's, not the code's.
"""

from __future__ import annotations

#: public name -> the measured call, in words
UTILS: dict[str, str] = {
    "utils.Config": "Config(units=4, name='dense'), an attribute set, to_json()",
    "utils.CustomObjectScope": "a CustomObjectScope of one class entered, get_custom_objects()",
    "utils.Progbar": "Progbar(4) updated four times with a loss (printed to a buffer)",
    "utils.array_to_img": "the census image (8, 8, 3) to a PIL image",
    "utils.img_to_array": "an 8x8 RGB PIL image to an array",
    "utils.save_img": "the census image saved as a PNG file",
    "utils.load_img": "a PNG file loaded, resized to 4x4",
    "utils.audio_dataset_from_directory": "two classes of two 16-sample WAV files, batch 2, "
    "iterated (where tensorflow is installed)",
    "utils.image_dataset_from_directory": "two classes of two 8x8 PNG files, image_size "
    "(4, 4), batch 2, iterated (where tensorflow is installed)",
    "utils.text_dataset_from_directory": "two classes of two text files, batch 2, iterated "
    "(where tensorflow is installed)",
    "utils.timeseries_dataset_from_array": "20 steps of 2 features, sequence_length 4, batch "
    "4, iterated (where tensorflow is installed)",
    "utils.split_dataset": "8 samples of x and y split in halves (where tensorflow is installed)",
    "utils.get_file": "a local .tar.gz (file: URL) fetched again and extracted, its sha256 "
    "checked (force_download=True; what it prints to a buffer)",
    "utils.bounding_boxes.affine_transform": "one image's two xyxy boxes rotated, shifted, "
    "scaled, sheared",
    "utils.bounding_boxes.clip_to_image_size": "two xyxy boxes and labels clipped to 8x8",
    "utils.bounding_boxes.compute_ciou": "the CIoU of two pairs of xyxy boxes",
    "utils.bounding_boxes.compute_iou": "the IoU table of two sets of xyxy boxes",
    "utils.bounding_boxes.convert_format": "two xyxy boxes to center_xywh",
    "utils.bounding_boxes.crop": "two xyxy boxes cropped to a 6x6 window",
    "utils.bounding_boxes.pad": "two xyxy boxes padded by 1 and 2 pixels",
    "utils.bounding_boxes.encode_box_to_deltas": "two xyxy boxes encoded against two anchors",
    "utils.bounding_boxes.decode_deltas_to_boxes": "two deltas decoded against two anchors",
    "utils.clear_session": "clear_session(free_memory=False) (with free_memory, a gc.collect "
    "runs whatever finalizers earlier tests left)",
    "utils.disable_interactive_logging": "interactive logging turned off, then on again",
    "utils.enable_interactive_logging": "interactive logging turned on",
    "utils.is_interactive_logging_enabled": "asked",
    "utils.get_custom_objects": "the registry read",
    "utils.get_registered_name": "the registered name of a registered class",
    "utils.get_registered_object": "a registered class looked up by its name",
    "utils.register_keras_serializable": "a new class registered, then taken out again",
    "utils.get_source_inputs": "the Input of a Functional model's output",
    "utils.is_keras_tensor": "asked of a KerasTensor",
    "utils.normalize": "(2, 3) float32 normalized along its last axis",
    "utils.to_categorical": "8 labels to one-hot of 3 classes",
    "utils.pad_sequences": "three int sequences of lengths 1 to 3 padded to 4",
    "utils.pack_x_y_sample_weight": "x, y and a sample weight packed",
    "utils.unpack_x_y_sample_weight": "a packed (x, y, sample weight) unpacked",
    "utils.standardize_dtype": "'float32' and numpy's float32 standardized",
    "utils.set_random_seed": "the global seed set",
    "utils.legacy.serialize_keras_object": "a Dense layer serialized the tf.keras way",
    "utils.legacy.deserialize_keras_object": "a Dense layer's tf.keras config deserialized",
    "utils.model_to_dot": "the census's Sequential classifier as a pydot graph (where pydot "
    "and graphviz are installed)",
    "utils.plot_model": "the census's Sequential classifier drawn to a PNG file (where pydot "
    "and graphviz are installed)",
}

#: the bounding-box formats besides ``xyxy``, Keras's own (``rel_`` ones relative to an 8x8
#: image): each is converted through ``xyxy``, by a function of its own each way (issue 37:
#: three of the last 400 commits changed one that no workload ran)
BOX_FORMATS = (
    "yxyx",
    "xywh",
    "center_xywh",
    "center_yxhw",
    "rel_xyxy",
    "rel_yxyx",
    "rel_xywh",
    "rel_center_xywh",
)
UTILS.update(
    {
        f"utils.bounding_boxes.convert_format[from {fmt}]": f"two {fmt} boxes to xyxy"
        for fmt in BOX_FORMATS
    }
)
UTILS.update(
    {
        f"utils.bounding_boxes.convert_format[to {fmt}]": f"two xyxy boxes to {fmt}"
        for fmt in BOX_FORMATS
        if fmt != "center_xywh"  # the plain entry's
    }
)

#: public names with no workload of their own, and why
EXCLUDED: dict[str, str] = {
    "utils.FeatureSpace": "measured by test_census_variants.py's test_feature_space (adapt, call)",
    "utils.PyDataset": "measured by test_census_model.py's Model.fit[PyDataset]",
    "utils.serialize_keras_object": "measured by every test of test_census_serialized.py",
    "utils.deserialize_keras_object": "measured by every test of test_census_serialized.py",
}

#: public name -> the package it needs beyond the perf environment's: skipped, with it named,
#: where missing (and, with Keras's ImportError, where graphviz's ``dot`` program is)
NEEDS: dict[str, str] = {
    "utils.model_to_dot": "pydot",
    "utils.plot_model": "pydot",
}

#: (backend or ``jax-nnx``, public name) -> why Keras fails there with an error other than
#: NotImplementedError
BROKEN: dict[tuple[str, str], str] = {}

#: public name -> environment variables its count follows and the test unsets (``Progbar`` and
#: ``get_file``'s progress bar redraw in place where ``PYCHARM_HOSTED`` is set)
UNSET: dict[str, tuple[str, ...]] = {
    "utils.Progbar": ("PYCHARM_HOSTED",),
    "utils.get_file": ("PYCHARM_HOSTED",),
}
