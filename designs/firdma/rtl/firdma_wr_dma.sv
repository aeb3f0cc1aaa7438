// firdma write DMA: packs results into DATA_W beats (partial last beat: WSTRB covers only the
// bytes of real results), queues them, and writes them with AXI4 INCR bursts to
// [DST_ADDR, DST_ADDR + 2*LEN). A burst address is issued only once all its beats are queued,
// so every issued burst completes with real data even after an abort or error.
`default_nettype none
module firdma_wr_dma #(
    parameter int DATA_W = 32,
    parameter int QUEUE_DEPTH = 16,   // >= 16 (the longest burst)
    parameter int MAX_OUTSTANDING = 4 // write responses awaited
) (
    input  wire                clk,
    input  wire                rst_n,
    input  wire                job_start,
    input  wire                stop,
    input  wire [31:0]         dst_addr,
    input  wire [15:0]         len,
    input  wire [4:0]          burst,
    // results from the FIR
    input  wire                y_valid,
    input  wire [15:0]         y_data,
    output wire                y_ready,
    // AXI4 write channels
    output reg  [31:0]         m_axi_awaddr,
    output reg  [7:0]          m_axi_awlen,
    output wire [2:0]          m_axi_awsize,
    output wire [1:0]          m_axi_awburst,
    output wire                m_axi_awlock,
    output wire [3:0]          m_axi_awcache,
    output wire [2:0]          m_axi_awprot,
    output reg                 m_axi_awvalid,
    input  wire                m_axi_awready,
    output wire [DATA_W-1:0]   m_axi_wdata,
    output wire [DATA_W/8-1:0] m_axi_wstrb,
    output wire                m_axi_wlast,
    output wire                m_axi_wvalid,
    input  wire                m_axi_wready,
    input  wire [1:0]          m_axi_bresp,
    input  wire                m_axi_bvalid,
    output wire                m_axi_bready,
    output wire                wr_err,   // pulse: first write response error of the job
    output wire                idle,     // no burst pending or in flight
    output wire                done      // every beat of the job written and acknowledged
);
    localparam int BYTES = DATA_W / 8;
    localparam int LANES = DATA_W / 16;
    localparam int ASH = $clog2(BYTES);
    localparam int LSH = $clog2(LANES);
    localparam int LW = (LANES > 1) ? $clog2(LANES) : 1;
    localparam int QA = $clog2(QUEUE_DEPTH);
    localparam int QC = $clog2(QUEUE_DEPTH + 1);
    localparam int OW = $clog2(MAX_OUTSTANDING + 1);
    localparam int EW = DATA_W + BYTES;

    // ---------------- packer
    reg [DATA_W-1:0] pack_data;
    reg [BYTES-1:0]  pack_strb;
    reg [LW-1:0]     lane;
    reg [15:0]       packed_n;

    // ---------------- beat queue
    reg [EW-1:0] q_mem [QUEUE_DEPTH];
    reg [QA-1:0] q_wptr, q_rptr;
    reg [QC-1:0] q_count;

    wire q_full = (q_count == QC'(QUEUE_DEPTH));
    assign y_ready = ~q_full;
    wire y_fire = y_valid & y_ready;
    wire beat_end = (lane == LW'(LANES - 1)) | (packed_n + 16'd1 == len);

    logic [DATA_W-1:0] beat_data;
    logic [BYTES-1:0]  beat_strb;
    always_comb begin
        beat_data = pack_data;
        beat_strb = pack_strb;
        beat_data[lane*16 +: 16] = y_data;
        beat_strb[lane*2 +: 2] = 2'b11;
    end
    wire q_push = y_fire & beat_end;

    // ---------------- bursts
    reg [31:0]   addr;
    reg [16:0]   beats_left;    // beats not yet covered by an issued burst
    reg          active;        // a job has been loaded and not finished
    reg          in_burst;      // sending the W beats of the last issued burst
    reg [8:0]    w_left;
    reg [OW-1:0] b_pending;
    reg          err_seen;

    assign m_axi_awsize  = 3'(ASH);
    assign m_axi_awburst = 2'b01;
    assign m_axi_awlock  = 1'b0;
    assign m_axi_awcache = 4'b0011;
    assign m_axi_awprot  = 3'b000;

    wire [12:0] to_4k = 13'(13'h1000 - {1'b0, addr[11:0]}) >> ASH;
    logic [16:0] next_len;
    always_comb begin
        next_len = {12'd0, burst};
        if (beats_left < next_len) next_len = beats_left;
        if ({4'd0, to_4k} < next_len) next_len = {4'd0, to_4k};
    end

    wire aw_fire = m_axi_awvalid & m_axi_awready;
    wire w_fire = m_axi_wvalid & m_axi_wready;
    wire b_fire = m_axi_bvalid & m_axi_bready;

    wire [EW-1:0] q_head = q_mem[q_rptr];
    assign m_axi_wdata  = q_head[DATA_W-1:0];
    assign m_axi_wstrb  = q_head[EW-1:DATA_W];
    assign m_axi_wvalid = in_burst & (q_count != '0);
    assign m_axi_wlast  = (w_left == 9'd1);
    assign m_axi_bready = 1'b1;

    assign wr_err = b_fire & m_axi_bresp[1] & ~err_seen;  // SLVERR or DECERR
    assign idle = ~m_axi_awvalid & ~in_burst & (b_pending == '0);
    assign done = active & (beats_left == 17'd0) & idle;
    wire unused_exokay = m_axi_bresp[0];  // EXOKAY counts as OKAY

    always_ff @(posedge clk) begin
        if (!rst_n || job_start) begin
            pack_data <= '0;
            pack_strb <= '0;
            lane      <= '0;
            packed_n  <= 16'd0;
            q_wptr    <= '0;
            q_rptr    <= '0;
            q_count   <= '0;
        end else begin
            if (y_fire) begin
                packed_n <= packed_n + 16'd1;
                if (beat_end) begin
                    pack_data <= '0;
                    pack_strb <= '0;
                    lane      <= '0;
                end else begin
                    pack_data <= beat_data;
                    pack_strb <= beat_strb;
                    lane      <= lane + 1'b1;
                end
            end
            if (q_push) begin
                q_mem[q_wptr] <= {beat_strb, beat_data};
                q_wptr <= q_wptr + 1'b1;
            end
            if (w_fire) q_rptr <= q_rptr + 1'b1;
            q_count <= q_count + QC'(q_push) - QC'(w_fire);
        end
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            addr          <= 32'd0;
            beats_left    <= 17'd0;
            active        <= 1'b0;
            in_burst      <= 1'b0;
            w_left        <= 9'd0;
            b_pending     <= '0;
            err_seen      <= 1'b0;
            m_axi_awvalid <= 1'b0;
            m_axi_awaddr  <= 32'd0;
            m_axi_awlen   <= 8'd0;
        end else if (job_start) begin
            addr       <= dst_addr;
            beats_left <= 17'(({1'b0, len} + 17'(LANES - 1)) >> LSH);
            active     <= 1'b1;
            err_seen   <= 1'b0;
        end else begin
            if (wr_err) err_seen <= 1'b1;
            if (done || (stop && idle)) active <= 1'b0;
            if (aw_fire) begin
                m_axi_awvalid <= 1'b0;
                in_burst   <= 1'b1;
                w_left     <= {1'b0, m_axi_awlen} + 9'd1;
                addr       <= addr + (({24'd0, m_axi_awlen} + 32'd1) << ASH);
                beats_left <= beats_left - ({9'd0, m_axi_awlen} + 17'd1);
            end else if (!m_axi_awvalid && !in_burst && !stop && !err_seen && active
                         && beats_left != 17'd0 && {{(17-QC){1'b0}}, q_count} >= next_len
                         && b_pending != OW'(MAX_OUTSTANDING)) begin
                m_axi_awvalid <= 1'b1;
                m_axi_awaddr  <= addr;
                m_axi_awlen   <= 8'(next_len - 17'd1);
            end
            if (w_fire) begin
                w_left <= w_left - 9'd1;
                if (m_axi_wlast) in_burst <= 1'b0;
            end
            if (aw_fire && !b_fire) b_pending <= b_pending + 1'b1;
            else if (!aw_fire && b_fire) b_pending <= b_pending - 1'b1;
        end
    end
endmodule
`default_nettype wire
