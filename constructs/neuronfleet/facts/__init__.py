"""AWS and Neuron facts as data with their sources: the instance catalog, Neuron versions, images, prices."""
