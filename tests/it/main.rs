mod measure;
