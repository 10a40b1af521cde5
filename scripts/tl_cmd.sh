F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DTC_WGMMA_ONLY"; mkdir -p build
nvcc $F -I. -Iptx -Iscripts -o build/tcw_tl scripts/tc_bench.cu & (cd build/mainsrc && nvcc $F -I. -Iptx -Iscripts -o ../tcw_main scripts/tc_bench.cu) & wait
cuobjdump -sass build/tcw_tl | gzip > $OUT/tl.sass.gz; cuobjdump -sass build/tcw_main | gzip > $OUT/main.sass.gz
C="=8b_gateup_m64 =8b_down_m64 =8b_down_m128 =70b_gateup_m64 =70b_gateup_m128 =8b_gateup_m128 =8b_gateup_m32"
for r in 1 2; do echo "=== round $r tileloop"; build/tcw_tl $C | grep -v "^device\|^graph\|^case"; echo "=== round $r main"; build/tcw_main $C | grep -v "^device\|^graph\|^case"; done
