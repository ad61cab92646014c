// The program of layer_check_<layer> (runtime/meson.build):
// links one layer whole against only the layers below it, so
// a call into a layer above fails to link. It runs nothing.
int main() { return 0; }
